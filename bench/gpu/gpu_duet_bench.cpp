// duet's side of bench/gpu/gpu.sh: training throughput of one model on one device, as the median
// of several timed windows after a warm-up, printed as one JSON line. bench/gpu/gpu_torch_bench.py
// is its PyTorch twin. Uses Fashion-MNIST when its files are found, else random images of its
// shape (the throughput does not depend on the pixel values), and says which. Its JSON names the
// paths convolution and batch norm took (cuDNN with deterministic algorithms, or duet's own
// kernels under DUET_CONV_IM2COL=1 / DUET_BATCH_NORM_KERNELS=duet), so the table can say.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "duet/data/fashion_mnist.h"
#include "duet/duet.h"
#include "duet/kernels/cuda/runtime.h"
#include "duet/nn/models/models.h"
#include "duet/optim/sgd.h"
#include "duet/parallel/graphed_single_device.h"
#include "duet/parallel/strategy.h"

using namespace duet;

namespace {

struct Args {
  std::string model = "lenet";
  std::string device = "cuda:0";
  int64_t batch_size = 256;
  int64_t warmup = 10;
  int windows = 5;
  int64_t window_batches = 20;
  bool tf32 = false;
  bool cuda_graph = false;
  bool synthetic = false;
  std::string data_dir = data::kFashionMnistDir;
};

// Fashion-MNIST's training set's shape, u8 images and labels 0..9, from a fixed seed.
data::TensorDataset synthetic_fashion_mnist(int64_t n) {
  data::TensorDataset set{empty({n, 1, 28, 28}, {.dtype = DType::u8}), empty({n}, {.dtype = DType::i64})};
  std::mt19937 random(0);
  uint8_t* pixels = set.images.data<uint8_t>();
  for (int64_t i = 0; i < set.images.numel(); ++i) pixels[i] = static_cast<uint8_t>(random() & 0xff);
  int64_t* labels = set.labels.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) labels[i] = static_cast<int64_t>(random() % 10);
  return set;
}

// Images per second of each window. Every train_step reads its loss back to the host, so a
// window's clock stops only once its GPU work has finished.
std::vector<double> time_windows(parallel::Strategy& strategy, data::DataLoader& loader, const Args& args) {
  std::vector<double> rates;
  int64_t step = 0, in_window = 0, images = 0;
  auto start = std::chrono::steady_clock::now();
  while (static_cast<int>(rates.size()) < args.windows) {
    for (auto& batch : loader) {  // a new shuffled epoch whenever one runs out
      strategy.train_step(batch);
      if (step++ < args.warmup) {
        start = std::chrono::steady_clock::now();
        continue;
      }
      images += batch.y.numel();
      if (++in_window == args.window_batches) {
        auto now = std::chrono::steady_clock::now();
        rates.push_back(static_cast<double>(images) / std::chrono::duration<double>(now - start).count());
        start = now;
        in_window = images = 0;
      }
      if (static_cast<int>(rates.size()) == args.windows) break;
    }
  }
  return rates;
}

// "im2col" or "cudnn", "duet" or "cudnn": as conv2d and batch norm read these variables.
std::string path_from_env(const char* variable, const char* value, const char* set, const char* unset) {
  const char* v = std::getenv(variable);
  return v && std::string(v) == value ? set : unset;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

int run(const Args& args) {
  const Device device = Device::parse(args.device);
  cuda::set_allow_tf32(args.tf32);
  data::TensorDataset train_set;
  std::string data_source = "fashion-mnist";
  if (args.synthetic) {
    data_source = "synthetic";
  } else {
    try {
      train_set = data::FashionMNIST::train(args.data_dir);
    } catch (const Error& e) {
      std::cerr << "gpu_duet_bench: " << e.what() << "; using synthetic data\n";
      data_source = "synthetic";
    }
  }
  if (data_source == "synthetic") train_set = synthetic_fashion_mnist(60000);

  manual_seed(0);
  std::shared_ptr<nn::Module> model = nn::models::make(args.model);
  model->to(device);
  auto sgd = std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = 0.1});
  std::unique_ptr<parallel::Strategy> strategy;
  if (args.cuda_graph) {
    strategy = std::make_unique<parallel::GraphedSingleDevice>(model, std::move(sgd), device);
  } else {
    strategy = std::make_unique<parallel::SingleDevice>(model, std::move(sgd), device);
  }
  // As `duet train --device cuda` loads: batches assembled in pinned memory by the loader's
  // thread and copied asynchronously (by that thread too, except for the graph's inputs).
  data::DataLoaderOptions loading{.batch_size = args.batch_size, .shuffle = true, .drop_last = true};
  loading.pin_memory = device.is_cuda();
  if (device.is_cuda() && !args.cuda_graph) loading.device = device;
  data::DataLoader loader(train_set, loading);
  std::vector<double> rates = time_windows(*strategy, loader, args);

  nlohmann::json result = {{"framework", "duet"},
                           {"mode", args.cuda_graph ? "duet-graph" : "duet"},
                           {"model", args.model},
                           {"device", device.str()},
                           {"data", data_source},
                           {"batch_size", args.batch_size},
                           {"tf32", args.tf32},
                           {"window_images_per_second", rates},
                           {"cudnn", "deterministic"},
                           {"conv", path_from_env("DUET_CONV_IM2COL", "1", "im2col", "cudnn")},
                           {"batch_norm", path_from_env("DUET_BATCH_NORM_KERNELS", "duet", "duet", "cudnn")},
                           {"cudnn_declined", cuda::cudnn_declined()},
                           {"train_images_per_second", median(rates)}};
  std::cout << result.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  CLI::App app{"gpu_duet_bench: duet's training throughput on one device (median of timed windows)"};
  app.add_option("--model", args.model, "Model")->check(CLI::IsMember(nn::models::names()))->capture_default_str();
  app.add_option("--device", args.device, "Device, e.g. cuda:0")->capture_default_str();
  app.add_option("--batch-size", args.batch_size, "Images per batch")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--warmup", args.warmup, "Untimed batches first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--windows", args.windows, "Timed windows")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--window-batches", args.window_batches, "Batches per window")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--tf32", args.tf32, "TF32 tensor cores for f32 matmul and convolution");
  app.add_flag("--cuda-graph", args.cuda_graph, "Replay the training step as a CUDA graph (GraphedSingleDevice)");
  app.add_flag("--synthetic", args.synthetic, "Random images of Fashion-MNIST's shape, even if the files exist");
  app.add_option("--data-dir", args.data_dir, "Folder with the Fashion-MNIST IDX files")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    return run(args);
  } catch (const Error& e) {
    std::cerr << "gpu_duet_bench: " << e.what() << "\n";
    return 1;
  }
}
