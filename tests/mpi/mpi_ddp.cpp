// DistributedDataParallel across processes: under mpirun, one rank per process, every rank
// trains on its shard of the same global batches and also trains single-device on the whole
// batches; after 5 SGD steps both hold the same parameters. The same for gradient accumulation
// (3 micro-batches per step against one step on their concatenation), for SyncBatchNorm
// against single-device BatchNorm, and for an MSE loss_fn on f32 targets with a schedule. zero1 (a sharded
// optimizer) runs the equivalence and accumulation checks too, and its gathered optimizer state (a collective) must
// match the single-device optimizer's. A plain program that exits non-zero when a check fails; every rank runs every
// step whatever the results, so a failed check never leaves another rank waiting.
//
//   mpi_ddp                 the equivalence checks (any number of ranks)
//   mpi_ddp --failing-rank  rank 1's forward throws: its abort must end the job on every rank
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "duet/duet.h"

using namespace duet;
using namespace duet::parallel;

namespace {

int failures = 0;

void check(bool ok, const std::string& what, int rank) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "mpi_ddp: rank %d: FAILED %s\n", rank, what.c_str());
}

// Batch `index` of the run, the same on every rank: `rows` random images and labels.
data::Batch global_batch(int64_t rows, uint64_t index) {
  std::mt19937 rng(static_cast<unsigned>(1000 + index));
  std::vector<float> pixels(static_cast<size_t>(rows * 28 * 28));
  std::vector<int64_t> labels(static_cast<size_t>(rows));
  for (float& p : pixels) p = static_cast<float>(rng() % 256) / 255.0f;
  for (int64_t& l : labels) l = static_cast<int64_t>(rng() % 10);
  return {from_vector(pixels, {rows, 1, 28, 28}), from_vector(labels, {rows})};
}

// Rank r's shard as a DistributedSampler deals it: rows r, r + n, r + 2n, ... (so 7 rows over
// 2 ranks are 4 + 3, and 2 rows over 3 ranks leave rank 2 without any).
data::Batch shard(const data::Batch& batch, int rank, int world) {
  const int64_t rows = batch.y.size(0);
  std::vector<float> x = batch.x.to_vector<float>();
  std::vector<int64_t> y = batch.y.to_vector<int64_t>();
  std::vector<float> xs;
  std::vector<int64_t> ys;
  const size_t image = 28 * 28;
  for (int64_t i = rank; i < rows; i += world) {
    xs.insert(xs.end(), x.begin() + static_cast<std::ptrdiff_t>(i * image),
              x.begin() + static_cast<std::ptrdiff_t>((i + 1) * image));
    ys.push_back(y[static_cast<size_t>(i)]);
  }
  const auto n = static_cast<int64_t>(ys.size());
  if (n == 0) return {empty({0, 1, 28, 28}), empty({0}, {.dtype = DType::i64})};
  return {from_vector(xs, {n, 1, 28, 28}), from_vector(ys, {n})};
}

std::unique_ptr<optim::Optimizer> sgd(std::vector<Tensor> params) {
  return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
}

// Every rank seeds differently, so the constructor's broadcast from rank 0 is what makes the
// replicas equal; rank 0's seed is the single-device run's.
std::shared_ptr<nn::Module> fresh(const std::string& model, int rank) {
  manual_seed(7 + static_cast<uint64_t>(rank));
  return nn::models::make(model);
}

// max |a - b| / max |b| per tensor, the worst over the tensors.
double max_relative_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    std::vector<double> va = a[i].to_vector<double>(), vb = b[i].to_vector<double>();
    double diff = 0, scale = 1e-12;
    for (size_t j = 0; j < va.size(); ++j) {
      diff = std::max(diff, std::fabs(va[j] - vb[j]));
      scale = std::max(scale, std::fabs(vb[j]));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

double max_relative_diff(nn::Module& a, nn::Module& b) { return max_relative_diff(a.parameters(), b.parameters()); }

std::vector<Tensor> buffers(const nn::Module& model) {
  std::vector<Tensor> out;
  for (const auto& [name, t] : model.named_buffers()) out.push_back(t);
  return out;
}

// How the gradients are reduced: one all-reduce per gradient, in buckets, or zero1's
// reduce-scattered buckets with a sharded optimizer.
enum class Mode { unbucketed, bucketed, zero1 };

const char* name(Mode mode) {
  return mode == Mode::unbucketed ? "unbucketed" : mode == Mode::bucketed ? "bucketed" : "zero1";
}

DDPOptions options_for(Mode mode) {
  return {.bucketed = mode != Mode::unbucketed,
          .shard_optimizer = mode == Mode::zero1,
          .first_bucket_mb = 4.0 / 1024,
          .bucket_cap_mb = 64.0 / 1024,
          .check_every = 1};
}

// zero1's whole optimizer state, gathered from the ranks' shards (every rank calls it), against
// the single-device optimizer's.
void check_gathered_state(DistributedDataParallel& ddp, const optim::Optimizer& single, const std::string& what,
                          int rank) {
  const nn::NamedTensors got = ddp.optimizer().state(), want = single.state();
  check(got.size() == want.size(), what + ": the gathered state's entries", rank);
  std::map<std::string, Tensor> wanted(want.begin(), want.end());
  for (const auto& [name, t] : got) {
    auto it = wanted.find(name);
    check(it != wanted.end() && max_relative_diff({t}, {it->second}) < 1e-5, what + ": gathered state '" + name + "'",
          rank);
  }
}

void run_equivalence(const std::shared_ptr<Communicator>& comm, const std::string& model, Mode mode) {
  const int r = comm->rank(), n = comm->world_size();
  const std::string what = model + " " + name(mode);
  DDPOptions options = options_for(mode);
  DistributedDataParallel ddp(fresh(model, r), sgd, comm, options);
  check(ddp.is_multi_process() == (n > 1) && ddp.world_size() == n && ddp.rank() == r, what + ": group", r);
  std::shared_ptr<nn::Module> reference = fresh(model, 0);
  SingleDevice single(reference, sgd(reference->parameters()), cpu(0));
  const int64_t rows[] = {12, 7, 12, 2, 7};
  for (uint64_t step = 0; step < 5; ++step) {
    data::Batch batch = global_batch(rows[step], step);
    StepResult got = ddp.train_step(shard(batch, r, n));
    StepResult want = single.train_step(batch);
    check(got.count == want.count && got.correct == want.correct,
          what + ": global counts, step " + std::to_string(step), r);
    check(std::fabs(got.loss - want.loss) < 1e-5 * std::fabs(want.loss),
          what + ": global loss " + std::to_string(got.loss) + " vs " + std::to_string(want.loss), r);
  }
  double diff = max_relative_diff(ddp.model(), *reference);
  check(diff < 1e-5, what + ": max relative parameter difference " + std::to_string(diff), r);
  if (mode == Mode::zero1) check_gathered_state(ddp, single.optimizer(), what, r);
  if (r == 0) std::printf("mpi_ddp: %s on %d ranks: max relative parameter difference %.2e\n", what.c_str(), n, diff);
}

// Gradient accumulation: 3 steps of 3 micro-batches (this rank's shards of them) against
// single-device steps on the concatenated global batches.
void run_accumulation(const std::shared_ptr<Communicator>& comm, Mode mode) {
  const int r = comm->rank(), n = comm->world_size();
  const std::string what = std::string("accumulation, ") + name(mode);
  DDPOptions options = options_for(mode);
  DistributedDataParallel ddp(fresh("lenet-relu", r), sgd, comm, options);
  std::shared_ptr<nn::Module> reference = fresh("lenet-relu", 0);
  SingleDevice single(reference, sgd(reference->parameters()), cpu(0));
  const int64_t rows[] = {9, 5, 4};
  for (uint64_t step = 0; step < 3; ++step) {
    std::vector<data::Batch> mine;
    std::vector<Tensor> xs, ys;
    for (uint64_t m = 0; m < 3; ++m) {
      data::Batch batch = global_batch(rows[m], 10 * step + m);
      mine.push_back(shard(batch, r, n));
      xs.push_back(batch.x);
      ys.push_back(batch.y);
    }
    StepResult got = ddp.train_accumulated(mine);
    StepResult want = single.train_step({cat(xs, 0), cat(ys, 0)});
    check(got.count == want.count && std::fabs(got.loss - want.loss) < 1e-5 * std::fabs(want.loss),
          what + ": global loss and count, step " + std::to_string(step), r);
  }
  double diff = max_relative_diff(ddp.model(), *reference);
  check(diff < 1e-5, what + ": max relative parameter difference " + std::to_string(diff), r);
  if (r == 0) std::printf("mpi_ddp: %s on %d ranks: max relative parameter difference %.2e\n", what.c_str(), n, diff);
}

// conv, BatchNorm, ReLU, pool, conv, BatchNorm, linear: the same weights on every rank's
// single-device reference, other weights on the other ranks' DDP models (the broadcast fixes them).
std::shared_ptr<nn::Module> batch_norm_model(int rank) {
  manual_seed(3 + static_cast<uint64_t>(rank));
  return std::shared_ptr<nn::Module>(nn::Sequential(
      nn::Conv2d(nn::Conv2dOptions(1, 3, 3)), nn::BatchNorm2d(3), nn::ReLU(), nn::MaxPool2d(2),
      nn::Conv2d(nn::Conv2dOptions(3, 4, 3)), nn::BatchNorm2d(4), nn::Flatten(), nn::Linear(4 * 11 * 11, 10)));
}

// A loss and targets of one's own across processes: a regression net trained with an MSE
// loss_fn on f32 targets [N, 1], its lr halved every 2 steps through set_lr on every rank,
// against single-device training with the same schedule. Each rank takes its contiguous rows of
// the global batch, as scatter splits it.
void run_regression(const std::shared_ptr<Communicator>& comm) {
  const int r = comm->rank(), n = comm->world_size();
  const LossFn mse = [](const Tensor& out, const Tensor& y) { return nn::functional::mse_loss(out, y); };
  auto net = [](int seed_rank) {
    manual_seed(7 + static_cast<uint64_t>(seed_rank));
    return nn::Sequential(nn::Linear(6, 16), nn::Tanh(), nn::Linear(16, 1)).ptr();
  };
  DistributedDataParallel ddp(net(r), sgd, comm, {.loss_fn = mse, .check_every = 1});
  std::shared_ptr<nn::Module> reference = net(0);
  SingleDevice single(reference, sgd(reference->parameters()), cpu(0), LossReduction::mean, mse);
  const optim::StepLR schedule(2, 0.5);  // lr 0.1, 0.1, 0.05, 0.05
  const int64_t rows[] = {12, 7, 9, 5};
  for (uint64_t step = 0; step < 4; ++step) {
    std::mt19937 rng(static_cast<unsigned>(2000 + step));
    std::normal_distribution<float> normal;
    std::vector<float> x(static_cast<size_t>(rows[step] * 6)), y(static_cast<size_t>(rows[step]));
    for (float& v : x) v = normal(rng);
    for (size_t i = 0; i < y.size(); ++i) y[i] = x[6 * i] - 0.5f * x[6 * i + 1];
    const data::Batch batch{from_vector(x, {rows[step], 6}), from_vector(y, {rows[step], 1})};
    const std::vector<int64_t> sizes = chunk_sizes(rows[step], n);
    int64_t start = 0;
    for (int k = 0; k < r; ++k) start += sizes[static_cast<size_t>(k)];
    const int64_t mine = sizes[static_cast<size_t>(r)];
    schedule.apply(ddp, 0.1, static_cast<int64_t>(step));
    schedule.apply(single, 0.1, static_cast<int64_t>(step));
    StepResult got = ddp.train_step({batch.x.narrow(0, start, mine), batch.y.narrow(0, start, mine)});
    StepResult want = single.train_step(batch);
    check(got.count == want.count && !got.correct && !want.correct,
          "regression: counts, and no correct count for f32 targets, step " + std::to_string(step), r);
    check(std::fabs(got.loss - want.loss) < 1e-5 * std::fabs(want.loss),
          "regression: global loss " + std::to_string(got.loss) + " vs " + std::to_string(want.loss), r);
  }
  check(ddp.optimizer().lr() == 0.05, "regression: the schedule's lr on this rank", r);
  double diff = max_relative_diff(ddp.model(), *reference);
  check(diff < 1e-5, "regression: max relative parameter difference " + std::to_string(diff), r);
  if (r == 0)
    std::printf("mpi_ddp: MSE regression with a schedule on %d ranks: max relative parameter difference %.2e\n", n,
                diff);
}

// SyncBatchNorm across processes equals single-device BatchNorm: parameters and running
// statistics, with unequal shards (none empty: every rank needs an example).
void run_sync_batchnorm(const std::shared_ptr<Communicator>& comm) {
  const int r = comm->rank(), n = comm->world_size();
  DDPOptions options{
      .first_bucket_mb = 4.0 / 1024, .bucket_cap_mb = 64.0 / 1024, .sync_batchnorm = true, .check_every = 1};
  DistributedDataParallel ddp(batch_norm_model(r), sgd, comm, options);
  std::shared_ptr<nn::Module> reference = batch_norm_model(0);
  SingleDevice single(reference, sgd(reference->parameters()), cpu(0));
  const int64_t rows[] = {12, 7, 11, 9, 7};
  for (uint64_t step = 0; step < 5; ++step) {
    data::Batch batch = global_batch(rows[step], 50 + step);
    StepResult got = ddp.train_step(shard(batch, r, n));
    StepResult want = single.train_step(batch);
    check(std::fabs(got.loss - want.loss) < 1e-5 * std::fabs(want.loss),
          "SyncBatchNorm: global loss " + std::to_string(got.loss) + " vs " + std::to_string(want.loss), r);
  }
  double diff = max_relative_diff(ddp.model(), *reference);
  check(diff < 1e-5, "SyncBatchNorm: max relative parameter difference " + std::to_string(diff), r);
  double stats = max_relative_diff(buffers(ddp.model()), buffers(*reference));
  check(stats < 1e-5, "SyncBatchNorm: max relative running-statistics difference " + std::to_string(stats), r);
  if (r == 0) {
    std::printf("mpi_ddp: SyncBatchNorm on %d ranks: parameters %.2e, running statistics %.2e\n", n, diff, stats);
  }
}

// Throws in forward on rank 1 only.
class ThrowsOnRank1Impl final : public nn::Cloneable<ThrowsOnRank1Impl> {
 public:
  explicit ThrowsOnRank1Impl(int rank) : rank_(rank) { weight_ = register_parameter("weight", zeros({784, 10})); }
  Tensor forward(const Tensor& x) override {
    DUET_CHECK(rank_ != 1, "deliberate failure in rank 1's forward");
    return matmul(x.flatten(1), parameter(weight_));
  }
  std::string name() const override { return "ThrowsOnRank1"; }

 private:
  int rank_;
  size_t weight_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const bool failing = argc > 1 && std::string(argv[1]) == "--failing-rank";
  // A generous timeout: a failing rank must end the job through its abort, not through this.
  auto comm = make_mpi_communicator({.timeout = std::chrono::seconds(100)});
  const int r = comm->rank();
  kernels::set_num_threads(1);  // the ranks share the machine's cores
  if (failing) {
    DistributedDataParallel ddp(std::make_shared<ThrowsOnRank1Impl>(r), sgd, comm);
    try {
      ddp.train_step(shard(global_batch(8, 0), r, comm->world_size()));
    } catch (const Error& e) {
      std::fprintf(stderr, "mpi_ddp: rank %d: step threw: %s\n", r, e.what());
    }
    std::fprintf(stderr, "mpi_ddp: rank %d: still running after rank 1 failed\n", r);
    return 1;
  }
  for (const char* model : {"mlp", "lenet-relu"}) {
    for (Mode mode : {Mode::bucketed, Mode::unbucketed, Mode::zero1}) run_equivalence(comm, model, mode);
  }
  for (Mode mode : {Mode::bucketed, Mode::unbucketed, Mode::zero1}) run_accumulation(comm, mode);
  run_sync_batchnorm(comm);
  run_regression(comm);
  std::printf("mpi_ddp: rank %d: %d failures\n", r, failures);
  comm.reset();  // before MPI_Finalize at exit
  return failures == 0 ? 0 : 1;
}
