// duet's side of `make bench`: trains one model for a fixed number of batches on Fashion-MNIST
// and prints one JSON line with its training and evaluation throughput and the process's peak
// RSS. bench/cpu/torch_bench.py is its PyTorch twin; bench/cpu/run.py runs both and compares them.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "duet/data/fashion_mnist.h"
#include "duet/duet.h"
#include "duet/nn/models/models.h"
#include "duet/optim/sgd.h"
#include "duet/parallel/strategy.h"
#include "flop_count.h"

using namespace duet;

namespace {

struct BenchArgs {
  std::string model = "lenet";
  int64_t batches = 60;
  int64_t warmup = 10;
  int threads = 0;  // 0: duet's default, all cores
  int64_t batch_size = 256;
  double lr = 0.1;
  uint64_t seed = 0;
  std::string data_dir = data::kFashionMnistDir;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ru_maxrss is this process's high-water mark in KiB on Linux; every run is its own process.
double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

struct TrainTiming {
  double images_per_second = 0;
  double last_loss = 0;
};

// `warmup` untimed steps (first allocations, caches), then `batches` timed ones. The loader
// starts a new shuffled epoch whenever one runs out.
TrainTiming time_training(parallel::Strategy& strategy, data::DataLoader& loader, int64_t warmup, int64_t batches) {
  TrainTiming timing;
  int64_t step = 0, images = 0;
  auto start = std::chrono::steady_clock::now();
  while (step < warmup + batches) {
    for (auto& batch : loader) {
      if (step == warmup) start = std::chrono::steady_clock::now();
      timing.last_loss = strategy.train_step(batch).loss;
      if (step >= warmup) images += batch.y.numel();
      if (++step == warmup + batches) break;
    }
  }
  timing.images_per_second = static_cast<double>(images) / seconds_since(start);
  return timing;
}

int run(const BenchArgs& args) {
  if (args.threads > 0) kernels::set_num_threads(args.threads);
  data::TensorDataset train_set, test_set;
  try {
    train_set = data::FashionMNIST::train(args.data_dir);
    test_set = data::FashionMNIST::test(args.data_dir);
  } catch (const Error& e) {
    std::cerr << "duet_bench: error: " << e.what() << "\n";
    return 2;
  }
  manual_seed(args.seed);
  std::shared_ptr<nn::Module> model = nn::models::make(args.model);
  bench::FlopCount flops = bench::count_flops(*model);
  parallel::SingleDevice strategy(
      model, std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = args.lr}), cpu());
  data::DataLoader train(train_set, {.batch_size = args.batch_size, .shuffle = true, .seed = args.seed});
  data::DataLoader test(test_set, {.batch_size = args.batch_size});

  TrainTiming training = time_training(strategy, train, args.warmup, args.batches);
  auto eval_start = std::chrono::steady_clock::now();
  double accuracy = parallel::evaluate(*model, test, cpu());
  double eval_images_per_second = static_cast<double>(test_set.size()) / seconds_since(eval_start);

  nlohmann::json result = {{"framework", "duet"},
                           {"model", args.model},
                           {"threads", kernels::num_threads()},
                           {"batch_size", args.batch_size},
                           {"warmup", args.warmup},
                           {"batches", args.batches},
                           {"train_images_per_second", training.images_per_second},
                           {"eval_images_per_second", eval_images_per_second},
                           {"peak_rss_mib", peak_rss_mib()},
                           {"last_loss", training.last_loss},
                           {"test_accuracy", accuracy},
                           {"parameters", model->num_parameters()},
                           {"forward_flop_per_image", flops.forward},
                           {"flop_per_image", flops.total()}};
  std::cout << result.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  BenchArgs args;
  CLI::App app{"duet_bench: duet's training and evaluation throughput on Fashion-MNIST"};
  app.add_option("--model", args.model, "Model")->check(CLI::IsMember(nn::models::names()))->capture_default_str();
  app.add_option("--batches", args.batches, "Timed training batches")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--warmup", args.warmup, "Untimed batches first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--threads", args.threads, "CPU threads (0: all cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--batch-size", args.batch_size, "Images per batch")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--lr", args.lr, "SGD learning rate")->capture_default_str();
  app.add_option("--seed", args.seed, "Seed for init and shuffling")->capture_default_str();
  app.add_option("--data-dir", args.data_dir, "Folder with the Fashion-MNIST IDX files")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    return run(args);
  } catch (const Error& e) {
    std::cerr << "duet_bench: " << e.what() << "\n";
    return 1;
  }
}
