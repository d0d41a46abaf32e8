#include "train_command.h"

#include <iostream>
#include <optional>

#include "duet/nn/models/models.h"
#include "duet/optim/checkpoint.h"
#include "duet/parallel/trainer.h"
#include "grad_compression_flag.h"
#include "run_settings.h"
#include "strategy_flags.h"
#include "train_args.h"
#include "train_report.h"
#include "train_setup.h"

namespace duet::apps {
namespace {

// Prints `message` and returns `code`. Under mpirun, a rank that simply exited would leave the
// others waiting in their next collective until the timeout (and MPI_Finalize, run at exit,
// would wait for them too): there the communicator's abort prints the message and ends the
// whole job at once.
int fail(const TrainSetup& setup, int code, const std::string& message) {
  if (setup.comm && setup.comm->world_size() > 1) setup.comm->abort(message);
  std::cerr << message << "\n";
  return code;
}

// Settle the flags (from the checkpoint with --resume), set up, train, report: bad flags,
// data, checkpoints or output paths exit 2 before the first step; a run that fails while
// training exits 1.
int run_train(TrainArgs args, const GivenFlags& given) {
  std::optional<optim::Checkpoint> checkpoint;
  std::vector<std::string> notes;
  try {
    check_paths_given(given, {{"--save", args.save},
                              {"--resume", args.resume},
                              {"--metrics", args.metrics},
                              {"--plot", args.plot},
                              {"--data-dir", args.data_dir}});
    if (!args.resume.empty()) checkpoint = optim::read_checkpoint(args.resume);
    notes = settle_run_settings(args, given, checkpoint ? &checkpoint->info.extra : nullptr, args.resume);
    if (checkpoint) notes.insert(notes.end(), checkpoint->notes.begin(), checkpoint->notes.end());
  } catch (const std::exception& e) {
    std::cerr << "duet train: error: " << e.what() << "\n";
    return kBadInput;
  }
  if (std::string problem = check_combination(args); !problem.empty()) {
    std::cerr << "duet train: error: " << problem << "\n";
    return kBadInput;
  }
  TrainSetup setup;
  std::optional<TrainReporter> reporter;
  try {
    set_up(args, setup, checkpoint ? &*checkpoint : nullptr);
    reporter.emplace(args, setup, notes, checkpoint ? &checkpoint->info : nullptr);
    checkpoint.reset();  // its tensors are in the strategy now
  } catch (const std::exception& e) {
    return fail(setup, kBadInput, std::string("duet train: error: ") + e.what());
  }
  parallel::Trainer trainer(*setup.strategy, *setup.train, *setup.test, args.accumulate);
  std::vector<parallel::EpochStats> history;
  try {
    history = trainer.fit(setup.first_epoch, args.epochs, reporter->callbacks());
    return reporter->report(history);
  } catch (const std::exception& e) {
    reporter->interrupted();
    return fail(setup, kFailed, std::string("duet train: ") + e.what());
  }
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "Train a model on Fashion-MNIST");
  cmd->add_option("--model", args->model, "Model to train")
      ->check(CLI::IsMember(nn::models::names()))
      ->capture_default_str();
  cmd->add_option("--epochs", args->epochs, "Number of epochs")->check(kPositive)->capture_default_str();
  cmd->add_option("--batch-size", args->batch_size, "Images per (global) batch")
      ->check(kPositive)
      ->capture_default_str();
  add_optimizer_flags(*cmd, args->optimizer);
  cmd->add_option("--seed", args->seed, "Seed for init, shuffling and dropout")->check(kSeed)->capture_default_str();
  cmd->add_option("--data-dir", args->data_dir, "Folder with the Fashion-MNIST IDX files")->capture_default_str();
  cmd->add_option("--threads", args->threads, "CPU threads (0: all cores, shared among MPI processes)")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--device", args->device, "cpu, cpu:N, cuda or cuda:N")->capture_default_str();
  add_strategy_flag(*cmd, "--strategy", args->strategy);
  cmd->add_option("--devices", args->devices, "Number of devices for dp and ddp in this process")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--device-ids", args->device_ids, "Explicit device indices for dp and ddp, e.g. 0,2")
      ->delimiter(',')
      ->check(kNonNegative);
  cmd->add_option("--comm", args->comm,
                  "ddp's communicator: local (threads in this process) or mpi (one rank per "
                  "process, under mpirun)")
      ->check(CLI::IsMember({"local", "mpi"}))
      ->capture_default_str();
  add_comm_timeout_flag(*cmd, args->comm_timeout);
  cmd->add_option("--save", args->save, "Write a checkpoint here after every epoch");
  cmd->add_option("--resume", args->resume, "Continue the run of this checkpoint (flags not given take its values)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--metrics", args->metrics, "Append one JSON object per epoch to this file");
  cmd->add_option("--plot", args->plot, "Draw loss and accuracy curves to this PNG");
  cmd->add_flag("--profile", args->profile, "Print where a training step's time goes: per phase and per kernel");
  cmd->add_option("--accumulate", args->accumulate,
                  "Micro-batches of --batch-size per optimizer step (gradient "
                  "accumulation; ddp all-reduces on the last one only)")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_flag("--sync-bn", args->sync_bn, "ddp: BatchNorm with the global batch's statistics (SyncBatchNorm)");
  add_grad_compression_flag(*cmd, args->grad_compression);
  cmd->add_flag("--cuda-graph", args->cuda_graph,
                "Record the training step once as a CUDA graph and replay it (one GPU, SGD, no dropout)");
  cmd->get_option("--lr")
      ->description(
          "Learning rate (default: SGD's per model: lenet 0.9, mlp and lenet-relu 0.2, resnet18 0.1; "
          "Adam's 0.001)")
      ->default_str("");
  cmd->callback([args, cmd, &exit_code] {
    GivenFlags given;
    for (const CLI::Option* option : cmd->get_options()) {
      if (option->count() > 0) given.insert(option->get_name());
    }
    exit_code = run_train(*args, given);
  });
}

}  // namespace duet::apps
