#include "train_command.h"

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "duet/data/fashion_mnist.h"
#include "duet/kernels/kernels.h"
#include "duet/nn/models/models.h"
#include "duet/optim/adam.h"
#include "duet/optim/checkpoint.h"
#include "duet/optim/sgd.h"
#include "duet/parallel/data_parallel.h"
#include "duet/parallel/distributed.h"
#include "duet/parallel/trainer.h"
#include "plot.h"
#include "progress.h"

namespace duet::apps {
namespace {

struct TrainArgs {
  std::string model = "lenet";
  int64_t epochs = 10;
  int64_t batch_size = 256;
  double lr = 0.9;
  std::string optimizer = "sgd";
  double momentum = 0;
  double weight_decay = 0;
  uint64_t seed = 0;
  std::string data_dir = data::kFashionMnistDir;
  int threads = 0;
  std::string device = "cpu";
  std::string strategy = "single";
  int devices = 1;
  std::string save, resume, metrics, plot;
};

// Exit codes: 0 done, 1 the run failed (e.g. diverged), 2 bad input.
constexpr int kBadInput = 2;

// CLI11's numeric ranges print the whole double range; these say what is wanted.
CLI::Validator at_least(double low, const char* what) {
  return CLI::Validator(
      [low, what](std::string& text) -> std::string {
        try {
          size_t used = 0;
          double value = std::stod(text, &used);
          if (used == text.size() && value >= low) return "";
        } catch (const std::exception&) {
        }
        return "expected " + std::string(what) + ", got '" + text + "'";
      },
      what);
}
const CLI::Validator kPositive = at_least(1, "a positive integer");
const CLI::Validator kNonNegative = at_least(0, "a number >= 0");

// devices = N logical devices of --device's type: cpu:0..N-1 (or cuda:0..N-1).
std::vector<Device> device_group(Device first, int count) {
  std::vector<Device> group;
  for (int i = 0; i < count; ++i) group.push_back({first.type, first.index + i});
  return group;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainArgs& args, std::vector<Tensor> params) {
  if (args.optimizer == "adam") {
    return std::make_unique<optim::Adam>(std::move(params),
                                         optim::AdamOptions{.lr = args.lr, .weight_decay = args.weight_decay});
  }
  return std::make_unique<optim::SGD>(
      std::move(params), optim::SGDOptions{.lr = args.lr, .momentum = args.momentum, .weight_decay = args.weight_decay});
}

nlohmann::json epoch_json(const TrainArgs& args, const parallel::EpochStats& e) {
  return {{"epoch", e.epoch + 1},         {"model", args.model},
          {"train_loss", e.train_loss},   {"train_acc", e.train_accuracy},
          {"test_acc", e.test_accuracy},  {"seconds", e.seconds},
          {"images_per_second", e.images_per_second}};
}

int run_train(const TrainArgs& args) {
  if (args.strategy == "single" && args.devices > 1) {
    std::cerr << "duet train: error: --devices " << args.devices << " needs --strategy dp or ddp\n";
    return kBadInput;
  }
  if (args.strategy == "ddp" && !args.resume.empty()) {
    // The checkpoint holds rank 0's model; its replicas would have to be rebuilt from it.
    std::cerr << "duet train: error: --resume is not supported with --strategy ddp yet; resume with single or dp\n";
    return kBadInput;
  }
  if (args.threads > 0) kernels::set_num_threads(args.threads);
  Device device;
  data::TensorDataset train_set, test_set;
  try {
    device = Device::parse(args.device);
    train_set = data::FashionMNIST::train(args.data_dir);
    test_set = data::FashionMNIST::test(args.data_dir);
  } catch (const Error& e) {
    std::cerr << "duet train: error: " << e.what() << "\n";
    return kBadInput;
  }
  data::DataLoader train(train_set, {.batch_size = args.batch_size, .shuffle = true, .seed = args.seed});
  data::DataLoader test(test_set, {.batch_size = args.batch_size});

  Generator& generator = default_generator();
  generator.manual_seed(args.seed);
  std::shared_ptr<nn::Module> model = nn::models::make(args.model);
  model->to(device);
  std::vector<Device> group = device_group(device, args.devices);
  std::unique_ptr<parallel::Strategy> chosen;
  if (args.strategy == "dp") {
    chosen = std::make_unique<parallel::DataParallel>(model, make_optimizer(args, model->parameters()), group);
  } else if (args.strategy == "ddp") {
    chosen = std::make_unique<parallel::DistributedDataParallel>(
        model, [&args](std::vector<Tensor> params) { return make_optimizer(args, std::move(params)); }, group);
  } else {
    chosen = std::make_unique<parallel::SingleDevice>(model, make_optimizer(args, model->parameters()), device);
  }
  parallel::Strategy& strategy = *chosen;

  int64_t first_epoch = 0;
  if (!args.resume.empty()) {
    try {
      optim::CheckpointInfo info = optim::load_checkpoint(args.resume, strategy.model(), strategy.optimizer(), generator);
      DUET_CHECK(info.extra["model"] == args.model, args.resume, ": checkpoint of model '", info.extra["model"],
                 "', but --model is '", args.model, "'");
      first_epoch = info.epochs_done;
    } catch (const Error& e) {
      std::cerr << "duet train: error: " << e.what() << "\n";
      return kBadInput;
    }
    std::cout << "resumed from " << args.resume << " after epoch " << first_epoch << "\n";
  }

  std::ofstream metrics;
  if (!args.metrics.empty()) {
    metrics.open(args.metrics, first_epoch > 0 ? std::ios::app : std::ios::trunc);
    if (!metrics) {
      std::cerr << "duet train: error: cannot write --metrics file " << args.metrics << "\n";
      return kBadInput;
    }
  }
  std::cout << "training " << args.model << " (" << model->num_parameters() << " parameters) on "
            << strategy.devices() << ": " << train_set.size() << " images, batch " << args.batch_size << ", "
            << args.optimizer << " lr " << args.lr << ", epochs " << first_epoch + 1 << ".." << args.epochs << std::endl;

  ProgressBar bar(stderr, args.epochs);
  parallel::TrainerCallbacks callbacks;
  callbacks.on_step = [&](const parallel::StepProgress& p) { bar.update(p); };
  callbacks.on_epoch = [&](const parallel::EpochStats& e) {
    bar.finish();
    std::printf("epoch %2lld  loss %.4f  train acc %.3f  test acc %.3f  %.1f s  %.0f img/s\n",
                static_cast<long long>(e.epoch + 1), e.train_loss, e.train_accuracy, e.test_accuracy, e.seconds,
                e.images_per_second);
    std::fflush(stdout);
    if (metrics.is_open()) metrics << epoch_json(args, e).dump() << "\n" << std::flush;
    if (!args.save.empty()) {
      optim::save_checkpoint(args.save, strategy.model(), strategy.optimizer(), generator,
                             {.epochs_done = e.epoch + 1, .extra = {{"model", args.model}}});
    }
  };
  parallel::Trainer trainer(strategy, train, test);
  std::vector<parallel::EpochStats> history;
  try {
    history = trainer.fit(first_epoch, args.epochs, callbacks);
  } catch (const Error& e) {
    bar.finish();
    std::cerr << "duet train: " << e.what() << "\n";
    return 1;
  }
  if (history.empty()) {
    std::cout << "nothing to do: the checkpoint already has " << first_epoch << " epochs\n";
    return 0;
  }
  double seconds = 0;
  for (const auto& e : history) seconds += e.seconds;
  std::printf("test acc %.2f, %.1f sec/epoch on %s\n", history.back().test_accuracy,
              seconds / static_cast<double>(history.size()), strategy.devices().c_str());
  if (!args.plot.empty()) {
    try {
      plot_history(history, args.plot, args.model + " on Fashion-MNIST");
      std::cout << "wrote " << args.plot << "\n";
    } catch (const Error& e) {
      std::cerr << "duet train: " << e.what() << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "Train a model on Fashion-MNIST");
  cmd->add_option("--model", args->model, "Model to train")->check(CLI::IsMember(nn::models::names()))->capture_default_str();
  cmd->add_option("--epochs", args->epochs, "Number of epochs")->check(kPositive)->capture_default_str();
  cmd->add_option("--batch-size", args->batch_size, "Images per batch")->check(kPositive)->capture_default_str();
  cmd->add_option("--lr", args->lr, "Learning rate")->check(kNonNegative)->capture_default_str();
  cmd->add_option("--optimizer", args->optimizer, "sgd or adam")->check(CLI::IsMember({"sgd", "adam"}))->capture_default_str();
  cmd->add_option("--momentum", args->momentum, "SGD momentum")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--weight-decay", args->weight_decay, "L2 penalty")->check(kNonNegative)->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed for init, shuffling and dropout")->capture_default_str();
  cmd->add_option("--data-dir", args->data_dir, "Folder with the Fashion-MNIST IDX files")->capture_default_str();
  cmd->add_option("--threads", args->threads, "CPU threads (0: all cores)")->check(kNonNegative)->capture_default_str();
  cmd->add_option("--device", args->device, "cpu, cpu:N, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--strategy", args->strategy, "single, dp (DataParallel) or ddp (DistributedDataParallel)")
      ->check(CLI::IsMember({"single", "dp", "ddp"}))->capture_default_str();
  cmd->add_option("--devices", args->devices, "Number of devices for dp and ddp")->check(kPositive)->capture_default_str();
  cmd->add_option("--save", args->save, "Write a checkpoint here after every epoch");
  cmd->add_option("--resume", args->resume, "Continue from this checkpoint")->check(CLI::ExistingFile);
  cmd->add_option("--metrics", args->metrics, "Append one JSON object per epoch to this file");
  cmd->add_option("--plot", args->plot, "Draw loss and accuracy curves to this PNG");
  cmd->callback([args, &exit_code] { exit_code = run_train(*args); });
}

}  // namespace duet::apps
