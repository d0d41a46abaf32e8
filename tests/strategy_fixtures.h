// What the strategy-equivalence tests share, on the CPU (tests/cpu/test_strategies.cpp) and
// on GPUs (tests/cuda/test_cuda_strategies.cpp): random batches, seeded models, training a
// strategy on them, and comparing the parameters it ends with.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "duet/duet.h"

namespace duet::test {

std::vector<Device> cpus(int n);  // cpu:0 .. cpu:n-1
std::vector<Device> gpus(int n);  // cuda:0 .. cuda:n-1

// Random images in [0, 1) and random labels, on the CPU: equivalence needs no real data.
data::Batch random_batch(int64_t rows, uint64_t seed, Shape image = {1, 28, 28});

// 12 and 7 rows give unequal shards (7 over 2: 4 + 3, over 3: 3 + 3 + 1); 2 rows over 3
// devices leaves one device without examples.
std::vector<data::Batch> five_batches();

// SGD, lr 0.1, momentum 0.9.
std::unique_ptr<optim::Optimizer> sgd(std::vector<Tensor> params);

// The same initial weights for every strategy (seed 7), on `device`.
std::shared_ptr<nn::Module> fresh(const std::string& model, Device device = cpu(0));

using Params = std::vector<std::pair<std::string, std::vector<double>>>;

// Trains `strategy` on `batches` and returns its model's parameters.
Params trained(parallel::Strategy& strategy, const std::vector<data::Batch>& batches);

// The largest, over the parameters, of max|a - b| / max|b|: relative to each tensor's scale,
// so elements near zero do not blow it up.
double max_relative_diff(const Params& a, const Params& b);

// conv, BatchNorm, ReLU, conv, BatchNorm, linear on 1x8x8 images (seed 3), on `device`, the
// BatchNorm layers with `options`.
std::shared_ptr<nn::Module> batch_norm_model(Device device = cpu(0), nn::BatchNormOptions options = {});
// Five batches of 1x8x8 images with unequal shards over 2 and 3 devices (7 rows: 4 + 3 and
// 3 + 3 + 1; 11: 6 + 5 and 4 + 4 + 3), but never an empty one: SyncBatchNorm needs an example
// on every rank.
std::vector<data::Batch> batches_8x8();

// Caps so small that lenet-relu and mlp get several buckets each.
parallel::DDPOptions tiny_buckets();

// Single-device training (sgd() on cpu:0) behind the Strategy interface, with train_step
// virtual and no train_accumulated of its own: a base for strategies that tests make wrong,
// or limited, on purpose.
class WrappedSingle : public parallel::Strategy {
 public:
  explicit WrappedSingle(std::shared_ptr<nn::Module> model);
  parallel::StepResult train_step(const data::Batch& batch) override { return inner_.train_step(batch); }
  nn::Module& model() override { return inner_.model(); }
  optim::Optimizer& optimizer() override { return inner_.optimizer(); }
  void set_lr(double lr) override { inner_.set_lr(lr); }
  Device device() const override { return inner_.device(); }
  std::string devices() const override { return inner_.devices(); }
  const parallel::PhaseTimes& last_phases() const override { return inner_.last_phases(); }

 protected:
  parallel::SingleDevice inner_;
};

}  // namespace duet::test
