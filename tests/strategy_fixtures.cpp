#include "strategy_fixtures.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

namespace duet::test {
namespace {

std::vector<Device> first_devices(Device first, int n) {
  std::vector<Device> devices;
  for (int i = 0; i < n; ++i) devices.push_back({first.type, i});
  return devices;
}

}  // namespace

std::vector<Device> cpus(int n) { return first_devices(cpu(0), n); }
std::vector<Device> gpus(int n) { return first_devices(cuda_device(0), n); }

data::Batch random_batch(int64_t rows, uint64_t seed, Shape image) {
  Generator g(seed);
  Shape sizes = {rows};
  sizes.insert(sizes.end(), image.begin(), image.end());
  std::mt19937 labels_rng(static_cast<unsigned>(seed));
  std::vector<int64_t> labels(static_cast<size_t>(rows));
  for (int64_t& label : labels) label = static_cast<int64_t>(labels_rng() % 10);
  return {rand(sizes, {}, &g), from_vector(labels, {rows})};
}

std::vector<data::Batch> five_batches() {
  std::vector<data::Batch> batches;
  int64_t rows[] = {12, 7, 12, 2, 7};
  for (uint64_t i = 0; i < 5; ++i) batches.push_back(random_batch(rows[i], 100 + i));
  return batches;
}

std::unique_ptr<optim::Optimizer> sgd(std::vector<Tensor> params) {
  return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
}

std::shared_ptr<nn::Module> fresh(const std::string& model, Device device) {
  manual_seed(7);
  std::shared_ptr<nn::Module> m = nn::models::make(model);
  m->to(device);
  return m;
}

std::shared_ptr<nn::Module> batch_norm_model(Device device, nn::BatchNormOptions options) {
  manual_seed(3);
  std::shared_ptr<nn::Module> m = nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 3, 3)), nn::BatchNorm2d(3, options),
                                                 nn::ReLU(), nn::Conv2d(nn::Conv2dOptions(3, 4, 3)),
                                                 nn::BatchNorm2d(4, options), nn::Flatten(), nn::Linear(4 * 4 * 4, 10))
                                      .ptr();
  m->to(device);
  return m;
}

std::vector<data::Batch> batches_8x8() {
  std::vector<data::Batch> batches;
  const int64_t rows[] = {12, 7, 11, 9, 7};
  for (uint64_t i = 0; i < 5; ++i) batches.push_back(random_batch(rows[i], 300 + i, {1, 8, 8}));
  return batches;
}

Params trained(parallel::Strategy& strategy, const std::vector<data::Batch>& batches) {
  for (const data::Batch& b : batches) strategy.train_step(b);
  Params out;
  for (const auto& [name, p] : strategy.model().named_parameters()) out.emplace_back(name, p.to_vector<double>());
  return out;
}

double max_relative_diff(const Params& a, const Params& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].second.size() == b[i].second.size());
    double diff = 0, scale = 1e-12;
    for (size_t j = 0; j < a[i].second.size(); ++j) {
      diff = std::max(diff, std::fabs(a[i].second[j] - b[i].second[j]));
      scale = std::max(scale, std::fabs(b[i].second[j]));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

WrappedSingle::WrappedSingle(std::shared_ptr<nn::Module> model) : inner_(model, sgd(model->parameters()), cpu(0)) {}

parallel::DDPOptions tiny_buckets() { return {.first_bucket_mb = 4.0 / 1024, .bucket_cap_mb = 64.0 / 1024}; }

}  // namespace duet::test
