#include "train_command.h"

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "cli_common.h"
#include "duet/data/fashion_mnist.h"
#include "duet/kernels/kernels.h"
#include "duet/nn/models/models.h"
#include "duet/optim/checkpoint.h"
#include "duet/parallel/data_parallel.h"
#include "duet/parallel/distributed.h"
#include "duet/parallel/graphed_single_device.h"
#include "duet/parallel/comm/mpi_communicator.h"
#include "duet/parallel/comm/nccl_communicator.h"
#include "duet/parallel/trainer.h"
#include "plot.h"
#include "progress.h"
#include "training_profile.h"

namespace duet::apps {
namespace {

struct TrainArgs {
  std::string model = "lenet";
  int64_t epochs = 10;
  int64_t batch_size = 256;
  OptimizerArgs optimizer;
  uint64_t seed = 0;
  std::string data_dir = data::kFashionMnistDir;
  int threads = 0;
  std::string device = "cpu";
  std::string strategy = "single";
  int devices = 1;
  std::vector<int> device_ids;  // instead of --devices: these indices of --device's type
  std::string comm = "local";
  std::string save, resume, metrics, plot;
  bool profile = false;
  bool cuda_graph = false;
  int64_t accumulate = 1;  // micro-batches per optimizer step
  bool sync_bn = false;
};

// The flag combinations that cannot work, as one message; empty when the flags are fine.
std::string check_combination(const TrainArgs& args) {
  if (args.strategy == "single" && (args.devices > 1 || args.device_ids.size() > 1)) {
    return "several devices need --strategy dp or ddp";
  }
  if (args.devices > 1 && !args.device_ids.empty()) return "give --devices or --device-ids, not both";
  std::set<int> distinct(args.device_ids.begin(), args.device_ids.end());
  if (distinct.size() != args.device_ids.size()) return "--device-ids lists a device twice";
  if (args.comm == "mpi" && args.strategy != "ddp") return "--comm mpi needs --strategy ddp";
  if (args.comm == "mpi" && (args.devices > 1 || args.device_ids.size() > 1)) {
    return "--comm mpi runs one device per process: start more processes with mpirun -np N instead of --devices";
  }
  if (args.sync_bn && args.strategy != "ddp") return "--sync-bn synchronises BatchNorm across ddp's ranks: it needs --strategy ddp";
  if (args.accumulate > 1 && args.cuda_graph) return "--accumulate runs several micro-batches per step, which --cuda-graph cannot replay";
  if (args.cuda_graph) {
    if (args.strategy != "single") return "--cuda-graph records a single device's step: it needs --strategy single";
    if (args.device.rfind("cuda", 0) != 0) return "--cuda-graph needs --device cuda";
    if (args.optimizer.name != "sgd") return "--cuda-graph needs --optimizer sgd: Adam's step cannot be replayed";
    if (args.profile) return "--profile times every kernel launch, and a replayed CUDA graph makes none: use one or the other";
  }
  if (args.strategy == "ddp" && !args.resume.empty()) {
    // The checkpoint holds rank 0's model; its replicas would have to be rebuilt from it.
    return "--resume is not supported with --strategy ddp yet; resume with single or dp";
  }
  return "";
}

// Under mpirun the processes on one machine share its cores: each takes its share, so that
// N processes do not oversubscribe them N times over.
int threads_per_process() {
  const int sharing = std::max(1, parallel::mpi_locality().local_size);
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / sharing);
}

// --comm mpi: this process's rank. CPU ranks talk over MPI; GPU ranks over NCCL, each on the
// GPU of its local rank (cuda:0 for the first process on a machine, cuda:1 for the next),
// with MPI only carrying NCCL's id. `device` becomes the rank's device.
std::shared_ptr<parallel::Communicator> mpi_rank_communicator(Device& device) {
  if (device.is_cpu()) return parallel::make_mpi_communicator({.device = device});
  auto bootstrap = parallel::make_mpi_communicator({.device = cpu(0)});
  auto comm = parallel::make_nccl_communicator(bootstrap);
  device = comm->device();
  return comm;
}

nlohmann::json epoch_json(const TrainArgs& args, const parallel::EpochStats& e) {
  return {{"epoch", e.epoch + 1},         {"model", args.model},
          {"train_loss", e.train_loss},   {"train_acc", e.train_accuracy},
          {"test_acc", e.test_accuracy},  {"seconds", e.seconds},
          {"images_per_second", e.images_per_second}};
}

// --devices N: N devices of --device's type from it on; --device-ids: exactly those.
std::vector<Device> devices_of(const TrainArgs& args, Device device) {
  std::vector<Device> group;
  for (int index : args.device_ids) group.push_back({device.type, index});
  return group.empty() ? device_group(device, args.devices) : group;
}

// How batches reach the devices. On GPUs they are assembled in pinned memory; where the batch
// enters on one device (single, dp, a ddp group of one), the loader's thread also queues its
// copy there, asynchronously, while the previous step runs. A ddp group of several local GPUs
// keeps its batches on the host and copies each device's rows, asynchronously from the pinned
// batch. On the CPU the loader works as it always did.
// With --cuda-graph the batches stay in pinned host memory: the labels are checked there before
// each replay, and the copy into the graph's inputs is queued just as asynchronously.
data::DataLoaderOptions loader_options(int64_t batch_size, const std::vector<Device>& group, const TrainArgs& args) {
  data::DataLoaderOptions options;
  options.batch_size = batch_size;
  if (group[0].is_cuda()) {
    options.pin_memory = true;
    if ((group.size() == 1 || args.strategy == "dp") && !args.cuda_graph) options.device = group[0];
  }
  return options;
}

// The model lives on group[0].
std::unique_ptr<parallel::Strategy> make_strategy(const TrainArgs& args, std::shared_ptr<nn::Module> model,
                                                  const std::vector<Device>& group,
                                                  std::shared_ptr<parallel::Communicator> comm) {
  auto optimizer_for = [&args](std::vector<Tensor> params) { return make_optimizer(args.optimizer, std::move(params)); };
  const Device device = group[0];
  const parallel::DDPOptions ddp{.sync_batchnorm = args.sync_bn};
  if (args.strategy == "dp") return std::make_unique<parallel::DataParallel>(model, optimizer_for(model->parameters()), group);
  if (args.strategy == "ddp" && comm) return std::make_unique<parallel::DistributedDataParallel>(model, optimizer_for, comm, ddp);
  if (args.strategy == "ddp") return std::make_unique<parallel::DistributedDataParallel>(model, optimizer_for, group, ddp);
  if (args.cuda_graph) return std::make_unique<parallel::GraphedSingleDevice>(model, optimizer_for(model->parameters()), device);
  return std::make_unique<parallel::SingleDevice>(model, optimizer_for(model->parameters()), device);
}

int run_train(const TrainArgs& args) {
  if (std::string problem = check_combination(args); !problem.empty()) {
    std::cerr << "duet train: error: " << problem << "\n";
    return kBadInput;
  }
  Device device;
  data::TensorDataset train_set, test_set;
  std::shared_ptr<parallel::Communicator> comm;  // --comm mpi: this process's rank
  try {
    device = Device::parse(args.device);
    if (args.comm == "mpi") {
      comm = mpi_rank_communicator(device);
      DUET_CHECK(args.batch_size % comm->world_size() == 0, "--batch-size ", args.batch_size,
                 " is the global batch and must be a multiple of the ", comm->world_size(), " MPI ranks");
    }
    train_set = data::FashionMNIST::train(args.data_dir);
    test_set = data::FashionMNIST::test(args.data_dir);
  } catch (const Error& e) {
    std::cerr << "duet train: error: " << e.what() << "\n";
    return kBadInput;
  }
  const bool leader = !comm || comm->rank() == 0;  // the one process that prints and writes files
  if (args.threads > 0) {
    kernels::set_num_threads(args.threads);
  } else if (comm) {
    kernels::set_num_threads(threads_per_process());
  }
  // Across processes each rank loads its 1/N of every global batch: the DistributedSampler
  // deals rank r the examples r, r + N, r + 2N, ... of the epoch's shuffled order.
  std::shared_ptr<const data::Sampler> sampler;
  int64_t batch_size = args.batch_size;
  if (comm) {
    sampler = std::make_shared<data::DistributedSampler>(comm->world_size(), comm->rank(), true, args.seed);
    batch_size /= comm->world_size();
  }

  Generator& generator = default_generator();
  generator.manual_seed(args.seed);
  std::shared_ptr<nn::Module> model = nn::models::make(args.model);
  std::vector<Device> group = devices_of(args, device);
  model->to(group[0]);
  data::DataLoaderOptions train_options = loader_options(batch_size, group, args);
  train_options.shuffle = true;
  train_options.seed = args.seed;
  data::DataLoader train(train_set, train_options, sampler);
  data::DataLoader test(test_set, loader_options(args.batch_size, group, args));
  std::unique_ptr<parallel::Strategy> chosen = make_strategy(args, model, group, comm);
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
  if (!args.metrics.empty() && leader) {
    metrics.open(args.metrics, first_epoch > 0 ? std::ios::app : std::ios::trunc);
    if (!metrics) {
      std::cerr << "duet train: error: cannot write --metrics file " << args.metrics << "\n";
      return kBadInput;
    }
  }
  if (leader) {
    std::cout << "training " << args.model << " (" << model->num_parameters() << " parameters) on "
              << strategy.devices() << ": " << train_set.size() << " images, batch " << args.batch_size
              << (args.accumulate > 1 ? " x " + std::to_string(args.accumulate) + " micro-batches" : "") << ", "
              << args.optimizer.name << " lr " << args.optimizer.lr << ", epochs " << first_epoch + 1 << ".."
              << args.epochs << std::endl;
  }

  ProgressBar bar(stderr, args.epochs);
  std::optional<TrainingProfile> profile;
  if (args.profile && leader) profile.emplace();
  parallel::TrainerCallbacks callbacks;
  if (leader) {
    callbacks.on_step = [&](const parallel::StepProgress& p) {
      bar.update(p);
      if (profile) profile->after_step(strategy.last_phases());
    };
  }
  callbacks.on_epoch = [&](const parallel::EpochStats& e) {
    if (!leader) return;
    if (profile) profile->after_epoch();
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
  parallel::Trainer trainer(strategy, train, test, args.accumulate);
  std::vector<parallel::EpochStats> history;
  try {
    history = trainer.fit(first_epoch, args.epochs, callbacks);
  } catch (const Error& e) {
    bar.finish();
    std::cerr << "duet train: " << e.what() << "\n";
    return kFailed;
  }
  if (!leader) return 0;
  if (history.empty()) {
    std::cout << "nothing to do: the checkpoint already has " << first_epoch << " epochs\n";
    return 0;
  }
  double seconds = 0;
  for (const auto& e : history) seconds += e.seconds;
  if (profile) profile->print(stdout, seconds, comm ? 1 : static_cast<int>(group.size()));
  std::printf("test acc %.2f, %.1f sec/epoch on %s\n", history.back().test_accuracy,
              seconds / static_cast<double>(history.size()), strategy.devices().c_str());
  if (!args.plot.empty()) {
    try {
      plot_history(history, args.plot, args.model + " on Fashion-MNIST");
      std::cout << "wrote " << args.plot << "\n";
    } catch (const Error& e) {
      std::cerr << "duet train: " << e.what() << "\n";
      return kFailed;
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
  cmd->add_option("--batch-size", args->batch_size, "Images per (global) batch")->check(kPositive)->capture_default_str();
  add_optimizer_flags(*cmd, args->optimizer);
  cmd->add_option("--seed", args->seed, "Seed for init, shuffling and dropout")->capture_default_str();
  cmd->add_option("--data-dir", args->data_dir, "Folder with the Fashion-MNIST IDX files")->capture_default_str();
  cmd->add_option("--threads", args->threads, "CPU threads (0: all cores, shared among MPI processes)")
      ->check(kNonNegative)->capture_default_str();
  cmd->add_option("--device", args->device, "cpu, cpu:N, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--strategy", args->strategy, "single, dp (DataParallel) or ddp (DistributedDataParallel)")
      ->check(CLI::IsMember({"single", "dp", "ddp"}))->capture_default_str();
  cmd->add_option("--devices", args->devices, "Number of devices for dp and ddp in this process")
      ->check(kPositive)->capture_default_str();
  cmd->add_option("--device-ids", args->device_ids, "Explicit device indices for dp and ddp, e.g. 0,2")
      ->delimiter(',')->check(kNonNegative);
  cmd->add_option("--comm", args->comm, "ddp's communicator: local (threads in this process) or mpi (one rank per "
                  "process, under mpirun)")->check(CLI::IsMember({"local", "mpi"}))->capture_default_str();
  cmd->add_option("--save", args->save, "Write a checkpoint here after every epoch");
  cmd->add_option("--resume", args->resume, "Continue from this checkpoint")->check(CLI::ExistingFile);
  cmd->add_option("--metrics", args->metrics, "Append one JSON object per epoch to this file");
  cmd->add_option("--plot", args->plot, "Draw loss and accuracy curves to this PNG");
  cmd->add_flag("--profile", args->profile, "Print where a training step's time goes: per phase and per kernel");
  cmd->add_option("--accumulate", args->accumulate, "Micro-batches of --batch-size per optimizer step (gradient "
                  "accumulation; ddp all-reduces on the last one only)")->check(kPositive)->capture_default_str();
  cmd->add_flag("--sync-bn", args->sync_bn, "ddp: BatchNorm with the global batch's statistics (SyncBatchNorm)");
  cmd->add_flag("--cuda-graph", args->cuda_graph,
                "Record the training step once as a CUDA graph and replay it (one GPU, SGD, no dropout)");
  cmd->callback([args, &exit_code] { exit_code = run_train(*args); });
}

}  // namespace duet::apps
