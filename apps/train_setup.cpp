#include "train_setup.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <set>
#include <thread>

#include "duet/core/generator.h"
#include "duet/data/fashion_mnist.h"
#include "duet/kernels/kernels.h"
#include "duet/nn/models/models.h"
#include "duet/nn/safetensors.h"
#include "duet/optim/checkpoint.h"
#include "duet/parallel/comm/mpi_communicator.h"
#include "duet/parallel/comm/nccl_communicator.h"
#include "file_collisions.h"
#include "output_paths.h"
#include "process_cores.h"
#include "rank_agreement.h"

namespace duet::apps {
namespace {

// --comm mpi: this process's rank. CPU ranks talk over MPI; GPU ranks over NCCL, each on the
// GPU of its local rank (cuda:0 for the first process on a machine, cuda:1 for the next),
// with MPI only carrying NCCL's id. `device` becomes the rank's device.
std::shared_ptr<parallel::Communicator> mpi_rank_communicator(Device& device, std::chrono::milliseconds timeout) {
  // Started by hand, MPI would quietly make a world of one process: the user asked for more.
  DUET_CHECK(started_by_mpirun(),
             "--comm mpi: this process was not started by mpirun, so it would train alone; "
             "run `mpirun -np N duet train --strategy ddp --comm mpi ...`, or use --comm local --devices N");
  if (device.is_cpu()) return parallel::make_mpi_communicator({.timeout = timeout, .device = device});
  auto bootstrap = parallel::make_mpi_communicator({.timeout = timeout, .device = cpu(0)});
  // Each process takes the GPU of its local rank (its rank among the processes on its machine).
  auto comm = parallel::make_nccl_communicator(bootstrap, {.timeout = timeout});
  device = comm->device();
  return comm;
}

// Every file the leader will write, before any work: one that is another output or an input,
// or that cannot be written, fails now, not after an epoch, and nothing is touched. Returns
// the lock of --save, held for the run.
std::unique_ptr<SaveLock> check_outputs(const TrainArgs& args) {
  std::vector<RunFile> files = dataset_files(args.data_dir);
  if (!args.resume.empty()) files.push_back({"--resume", args.resume});
  const std::string best = args.save + ".best";
  if (!args.save.empty()) {
    files.push_back({"--save", args.save, true});
    files.push_back({"--save's .best copy", best, true});
    files.push_back({"--save's lock file", save_lock_path(args.save), true});
  }
  if (!args.metrics.empty()) files.push_back({"--metrics", args.metrics, true});
  if (!args.plot.empty()) files.push_back({"--plot", args.plot, true});
  // A run continues the checkpoint it replaces.
  check_no_collisions(files, {{"--save", "--resume"}});
  std::unique_ptr<SaveLock> lock;
  if (!args.save.empty()) {
    check_output_file("--save", args.save, WriteMode::by_rename);
    check_output_file("--save's .best copy", best, WriteMode::by_rename);
    check_output_file("--save's lock file", save_lock_path(args.save));
    check_name_fits("--save's partial file", nn::partial_path(args.save));
    check_name_fits("--save's partial file", nn::partial_path(best));
  }
  if (!args.metrics.empty()) check_output_file("--metrics", args.metrics);
  if (!args.plot.empty()) {
    check_output_file("--plot", args.plot);
    check_gnuplot("--plot");
  }
  if (!args.save.empty()) lock = std::make_unique<SaveLock>("--save", args.save);
  return lock;
}

// --devices N: N devices of --device's type from it on; --device-ids: exactly those.
std::vector<Device> devices_of(const TrainArgs& args, Device device) {
  if (!args.device_ids.empty()) return devices_with_ids(device.type, args.device_ids, "--device-ids");
  return device_group(device, args.devices, "--devices");
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
    if ((group.size() == 1 || args.strategy == parallel::StrategyKind::dp) && !args.cuda_graph)
      options.device = group[0];
  }
  return options;
}

}  // namespace

std::string check_combination(const TrainArgs& args) {
  if (args.strategy == parallel::StrategyKind::single && (args.devices > 1 || args.device_ids.size() > 1)) {
    return "several devices need --strategy dp, ddp or zero1";
  }
  if (args.devices > 1 && !args.device_ids.empty()) return "give --devices or --device-ids, not both";
  std::set<int> distinct(args.device_ids.begin(), args.device_ids.end());
  if (distinct.size() != args.device_ids.size()) return "--device-ids lists a device twice";
  if (args.comm == "mpi" && !parallel::runs_across_processes(args.strategy))
    return "--comm mpi needs --strategy ddp (or a variant other than ddp-d2l) or zero1";
  if (std::string problem = optimizer_args_problem(args.optimizer); !problem.empty()) return problem;
  if (args.comm == "mpi" && (args.devices > 1 || args.device_ids.size() > 1)) {
    return "--comm mpi runs one device per process: start more processes with mpirun -np N instead of --devices";
  }
  if (args.cuda_graph) {
    if (args.strategy != parallel::StrategyKind::single)
      return "--cuda-graph records a single device's step: it needs --strategy single";
    if (args.device.rfind("cuda", 0) != 0) return "--cuda-graph needs --device cuda";
    if (args.optimizer.name != "sgd") return "--cuda-graph needs --optimizer sgd: Adam's step cannot be replayed";
    if (args.profile)
      return "--profile times every kernel launch, and a replayed CUDA graph makes none: use one or the other";
  }
  if (args.grad_compression != parallel::GradCompression::none) {
    if (!parallel::is_ddp(args.strategy) || args.strategy == parallel::StrategyKind::ddp_d2l)
      return "--grad-compression compresses ddp's gradient all-reduce: it needs --strategy ddp (or a variant other "
             "than ddp-d2l)";
    if (args.comm == "mpi") return "--grad-compression runs on the local communicators only, not under --comm mpi";
  }
  if (args.sync_bn && !parallel::is_distributed(args.strategy)) {
    return "--sync-bn synchronises BatchNorm across ddp's ranks: it needs --strategy ddp or zero1";
  }
  if (args.accumulate > 1 && args.cuda_graph) {
    return "--accumulate runs several micro-batches per step, which --cuda-graph cannot replay";
  }
  return "";
}

void set_up(const TrainArgs& args, TrainSetup& setup, const optim::Checkpoint* checkpoint) {
  Device device = Device::parse(args.device);
  if (args.comm == "mpi") {
    setup.comm = mpi_rank_communicator(device, comm_timeout(args.comm_timeout));
    setup.leader = setup.comm->rank() == 0;
  }
  if (setup.leader) setup.save_lock = check_outputs(args);
  const std::vector<Device> group = devices_of(args, device);
  Generator& generator = default_generator();
  generator.manual_seed(args.seed);
  std::shared_ptr<nn::Module> model = nn::models::make(args.model);
  // Before any collective whose size depends on the settings (the strategy's broadcast of the
  // parameters), and before the data loads, so that a mismatch ends the job at once.
  if (setup.comm) {
    check_ranks_agree(*setup.comm, rank_settings(args, checkpoint ? checkpoint->info.epochs_done : 0, *model));
  }
  data::TensorDataset train_set = data::FashionMNIST::train(args.data_dir);
  data::TensorDataset test_set = data::FashionMNIST::test(args.data_dir);
  setup.train_images = train_set.size();
  // A batch larger than the training set is the whole set, once per epoch: say so, and print
  // the batch that is used.
  setup.batch_size = std::min(args.batch_size, setup.train_images);
  if (setup.batch_size < args.batch_size) {
    setup.notes.push_back("--batch-size " + std::to_string(args.batch_size) + " is more than the " +
                          std::to_string(setup.train_images) + " training images; using " +
                          std::to_string(setup.batch_size));
  }
  int threads = args.threads;
  if (std::string note = clamp_threads(threads, "--threads"); !note.empty()) setup.notes.push_back(note);
  if (threads > 0) {
    kernels::set_num_threads(threads);
  } else if (setup.comm) {
    // The processes on one machine share its cores: each takes its share (process_cores.h).
    kernels::set_num_threads(process_cores().count);
  }
  // Across processes each rank loads its 1/N of every global batch: the DistributedSampler
  // deals rank r the examples r, r + N, r + 2N, ... of the epoch's shuffled order.
  std::shared_ptr<const data::Sampler> sampler;
  int64_t batch_size = setup.batch_size;
  if (setup.comm) {
    const int ranks = setup.comm->world_size();
    DUET_CHECK(setup.batch_size % ranks == 0, "--batch-size ", setup.batch_size,
               " is the global batch and must be a multiple of the ", ranks, " MPI ranks");
    sampler = std::make_shared<data::DistributedSampler>(ranks, setup.comm->rank(), true, args.seed);
    batch_size /= ranks;
  }

  setup.device_threads = setup.comm ? 1 : static_cast<int>(group.size());
  model->to(group[0]);
  // Before the strategy exists: dp broadcasts this model, and ddp's replicas start as its copies.
  if (checkpoint) checkpoint->restore_model(*model);
  data::DataLoaderOptions train_options = loader_options(batch_size, group, args);
  train_options.shuffle = true;
  train_options.seed = args.seed;
  setup.train = std::make_unique<data::DataLoader>(train_set, train_options, sampler);
  setup.test = std::make_unique<data::DataLoader>(test_set, loader_options(setup.batch_size, group, args));
  // Every optimizer the strategy makes (one per ddp replica) starts from the checkpoint's state.
  auto make_optimizer = [&args, checkpoint](std::vector<Tensor> params) {
    std::unique_ptr<optim::Optimizer> optimizer = apps::make_optimizer(args.optimizer, std::move(params));
    if (checkpoint) checkpoint->restore_optimizer(*optimizer);
    return optimizer;
  };
  setup.strategy = parallel::make_strategy(args.strategy, model, make_optimizer, group,
                                           {.cuda_graph = args.cuda_graph,
                                            .comm = setup.comm,
                                            .ddp = {.sync_batchnorm = args.sync_bn,
                                                    .grad_compression = args.grad_compression,
                                                    .comm_timeout = comm_timeout(args.comm_timeout)}});
  if (checkpoint) {
    checkpoint->restore_generator(generator);
    setup.first_epoch = checkpoint->info.epochs_done;
  }
}

}  // namespace duet::apps
