// NCCL communicator. Compiled only with CUDA and NCCL (DUET_HAS_NCCL); see the header for the
// stream, wait and failure semantics.
//
// Threading: a rank's collectives may be launched from one thread (a backward hook) and waited
// from another (the step), so a rank's NCCL communicator is used under its own mutex: NCCL
// forbids using one communicator from two threads at once, ncclCommAbort included.
#ifdef DUET_HAS_NCCL

#include "duet/parallel/comm/nccl_communicator.h"

#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>
#include <utility>

#include "duet/autograd/factory.h"
#include "duet/core/error.h"
#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/device.h"
#include "duet/kernels/cuda/runtime.h"
#include "duet/parallel/comm/mpi_communicator.h"
#include "duet/parallel/comm/nccl_devices.h"
#include "duet/parallel/comm/ring.h"

namespace duet::parallel {
namespace {

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::i64:
      return ncclInt64;
    case DType::u8:
      return ncclUint8;
  }
  DUET_FAIL("NCCL: unknown dtype ", static_cast<int>(dtype));
}

ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::avg ? ncclAvg : ncclSum; }

// An event that orders one stream after another; no timing, so recording it is cheap.
class Event {
 public:
  Event() { DUET_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~Event() { cuda::ignore_cuda_error(cudaEventDestroy(event_)); }  // a pending event is released once it completes
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// How one rank's failure reaches the others: in one process through this shared record, which
// every rank's waits poll; across processes through the bootstrap's abort() (MPI ends the job).
class GroupFailure {
 public:
  explicit GroupFailure(std::shared_ptr<Communicator> bootstrap = nullptr) : bootstrap_(std::move(bootstrap)) {}

  void fail(int rank, const std::string& reason) {
    {
      std::lock_guard lock(mutex_);
      if (failed_.load()) return;  // the first failure is the one reported
      message_ = "rank " + std::to_string(rank) + ": " + reason;
      failed_.store(true);
    }
    if (bootstrap_) bootstrap_->abort("NCCL group failed: " + message_);
  }

  std::optional<std::string> failure() const {
    if (!failed_.load()) return std::nullopt;
    std::lock_guard lock(mutex_);
    return message_;
  }

 private:
  mutable std::mutex mutex_;
  std::atomic<bool> failed_{false};
  std::string message_;
  std::shared_ptr<Communicator> bootstrap_;
};

// One rank's NCCL communicator, its communication stream and its failure state, shared by the
// rank's Works (a Work may outlive its Communicator). Every member is used under `mutex`.
struct RankState {
  RankState(ncclComm_t comm_, int rank_, int size_, Device device_, NcclOptions options_,
            std::shared_ptr<GroupFailure> group_)
      : comm(comm_), rank(rank_), size(size_), device(device_), options(options_), group(std::move(group_)) {
    try {
      cuda::DeviceGuard guard(device);
      DUET_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_stream, cudaStreamNonBlocking));
    } catch (...) {
      ncclCommDestroy(comm);
      throw;
    }
  }

  ~RankState() {
    // Destructors cannot throw: failures here are ignored, the process is tearing the group down.
    try {
      cuda::DeviceGuard guard(device);
      // ncclCommDestroy finalises, which may wait on peers; after a failure they may be gone, so
      // the communicator is aborted instead (local, never waits). Abort before synchronising: a
      // collective still waiting for a failed peer never finishes, and only the abort ends it.
      if (group->failure()) abort_comm();
      cuda::ignore_cuda_error(cudaStreamSynchronize(comm_stream));
      if (comm) ncclCommDestroy(comm);
      cuda::ignore_cuda_error(cudaStreamDestroy(comm_stream));
    } catch (...) {
    }
  }

  RankState(const RankState&) = delete;
  RankState& operator=(const RankState&) = delete;

  // Aborts this rank's NCCL communicator (its pending kernels end) and fails the group, once.
  void fail(const std::string& reason) {
    abort_comm();
    group->fail(rank, reason);
  }

  void abort_comm() {
    if (!comm) return;
    ncclCommAbort(comm);  // its result does not matter: the communicator is unusable either way
    comm = nullptr;
  }

  // Throws if the group has failed (on any rank), aborting this rank's communicator first.
  void throw_if_failed(const std::string& what) {
    if (std::optional<std::string> failure = group->failure()) {
      abort_comm();
      DUET_FAIL(what, " on rank ", rank, " failed: the NCCL group failed (", *failure, ")");
    }
  }

  std::mutex mutex;
  ncclComm_t comm = nullptr;  // null once aborted
  const int rank;
  const int size;
  const Device device;
  const NcclOptions options;
  const std::shared_ptr<GroupFailure> group;
  cudaStream_t comm_stream = nullptr;
  uint64_t seq = 0;  // collectives launched, for error messages
};

// Completion of one collective: the event recorded on the communication stream after it.
class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<RankState> state, std::string what, std::vector<Tensor> tensors)
      : state_(std::move(state)), what_(std::move(what)), tensors_(std::move(tensors)) {}

  // Dropped without wait(): the compute stream still waits for the collective before the
  // tensors' memory can be handed to later kernels. After a failure the communicator was
  // aborted and its kernels ended, so the memory is released as is.
  ~NcclWork() override {
    if (tensors_.empty() || !error_.empty()) return;
    try {
      std::lock_guard lock(state_->mutex);
      if (!state_->comm) return;
      cuda::DeviceGuard guard(state_->device);
      cuda::ignore_cuda_error(cudaStreamWaitEvent(cuda::stream(state_->device), done_.get(), 0));
    } catch (...) {  // a destructor cannot throw; the device was usable when the collective launched
    }
  }

  cudaEvent_t done_event() const { return done_.get(); }

  // The host learns of completion only by polling, so this is when a wait() saw it: for a
  // bucket that finished during backward, the wait after backward (an upper bound).
  std::optional<std::chrono::steady_clock::time_point> finished_at() const override {
    if (!finished_) return std::nullopt;
    return finished_at_;
  }

  // The collective could not be queued. Called under the rank's mutex, where the Work is then
  // dropped: its destructor must not take that mutex again (it would deadlock), and has nothing
  // to order after.
  void launch_failed(const std::string& error) { error_ = error.empty() ? what_ + " failed to launch" : error; }

  void wait() override {
    if (!error_.empty()) DUET_FAIL(error_);
    if (finished_) return;
    try {
      poll_until_done();
    } catch (const std::exception& e) {
      error_ = e.what();
      throw;
    }
    cuda::DeviceGuard guard(state_->device);
    DUET_CUDA_CHECK(cudaStreamWaitEvent(cuda::stream(state_->device), done_.get(), 0));
    finished_at_ = std::chrono::steady_clock::now();
    finished_ = true;
    tensors_.clear();  // the compute stream now runs after the collective: the memory may be reused
  }

 private:
  void poll_until_done() {
    const auto deadline = std::chrono::steady_clock::now() + state_->options.timeout;
    for (int polls = 0;; ++polls) {
      cudaError_t status = cudaEventQuery(done_.get());
      if (status == cudaSuccess) return;
      if (status != cudaErrorNotReady) DUET_CUDA_CHECK(status);
      cuda::ignore_cuda_error(status);  // "not ready" is an answer, not an error to report later
      {
        std::lock_guard lock(state_->mutex);
        state_->throw_if_failed(what_);
        DUET_CHECK(state_->comm, what_, " on rank ", state_->rank, ": the NCCL communicator was aborted");
        ncclResult_t async_error = ncclSuccess;
        DUET_NCCL_CHECK(ncclCommGetAsyncError(state_->comm, &async_error));
        if (async_error != ncclSuccess && async_error != ncclInProgress) {
          std::string reason = what_ + " failed: " + ncclGetErrorString(async_error);
          state_->fail(reason);
          DUET_FAIL(reason, " (rank ", state_->rank, ")");
        }
        if (std::chrono::steady_clock::now() >= deadline) {
          std::string reason = what_ + " timed out after " + std::to_string(state_->options.timeout.count()) +
                               " ms: a rank died, is stuck, or issued a different collective";
          state_->fail(reason);
          DUET_FAIL(reason, " (rank ", state_->rank, ")");
        }
      }
      // Spin briefly for latency, then back off so a waiting rank leaves the cores to others.
      if (polls < 1000) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  std::shared_ptr<RankState> state_;
  std::string what_;
  std::vector<Tensor> tensors_;  // kept alive until the collective has finished
  Event done_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point finished_at_;
  std::string error_;
};

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(std::shared_ptr<RankState> state)
      : state_(std::move(state)), barrier_scratch_(zeros({1}, {.device = state_->device})) {}

  ~NcclCommunicator() override = default;  // the RankState, shared with the Works, owns the handles

  int rank() const override { return state_->rank; }
  int world_size() const override { return state_->size; }
  Device device() const override { return state_->device; }
  std::string name() const override { return "nccl"; }

  void abort(const std::string& reason) override {
    std::lock_guard lock(state_->mutex);
    state_->fail(reason);
  }

 protected:
  std::shared_ptr<Work> all_reduce_impl(const Tensor& t, ReduceOp op) override {
    auto work =
        launch(describe_collective("all_reduce", t, parallel::name(op)), {t}, [&](ncclComm_t c, cudaStream_t s) {
          DUET_NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), count(t), nccl_type(t.dtype()), nccl_op(op), c, s));
        });
    t.bump_version();
    count_bytes_sent(
        ring::all_reduce_bytes_sent(t.numel(), static_cast<int64_t>(t.element_size()), world_size(), rank()));
    return work;
  }

  // The byte counts below are the MPI communicator's model (parallel/comm/mpi_communicator.cpp).
  std::shared_ptr<Work> broadcast_impl(const Tensor& t, int root) override {
    auto work = launch(
        describe_collective("broadcast", t, "root " + std::to_string(root)), {t}, [&](ncclComm_t c, cudaStream_t s) {
          DUET_NCCL_CHECK(ncclBroadcast(t.data_ptr(), t.data_ptr(), count(t), nccl_type(t.dtype()), root, c, s));
        });
    if (rank() != root) t.bump_version();
    if (rank() == root) count_bytes_sent((world_size() - 1) * t.nbytes());
    return work;
  }

  std::shared_ptr<Work> reduce_impl(const Tensor& t, int root, ReduceOp op) override {
    const bool is_root = rank() == root;
    auto work = launch(describe_collective("reduce", t, "root " + std::to_string(root) + ", " + parallel::name(op)),
                       {t}, [&](ncclComm_t c, cudaStream_t s) {
                         // Only the root's receive buffer is written; the others' t stay as they were.
                         DUET_NCCL_CHECK(ncclReduce(t.data_ptr(), is_root ? t.data_ptr() : nullptr, count(t),
                                                    nccl_type(t.dtype()), nccl_op(op), root, c, s));
                       });
    if (is_root) t.bump_version();
    if (!is_root) count_bytes_sent(t.nbytes());
    return work;
  }

  // In place (t is out's chunk rank()) is NCCL's own in-place form: sendbuff at recvbuff + rank * count.
  std::shared_ptr<Work> all_gather_impl(const Tensor& t, const Tensor& out) override {
    auto work = launch(describe_collective("all_gather", t), {t, out}, [&](ncclComm_t c, cudaStream_t s) {
      DUET_NCCL_CHECK(ncclAllGather(t.data_ptr(), out.data_ptr(), count(t), nccl_type(t.dtype()), c, s));
    });
    out.bump_version();
    count_bytes_sent((world_size() - 1) * t.nbytes());
    return work;
  }

  std::shared_ptr<Work> reduce_scatter_impl(const Tensor& in, const Tensor& out, ReduceOp op) override {
    auto work = launch(
        describe_collective("reduce_scatter", in, parallel::name(op)), {in, out}, [&](ncclComm_t c, cudaStream_t s) {
          DUET_NCCL_CHECK(
              ncclReduceScatter(in.data_ptr(), out.data_ptr(), count(out), nccl_type(in.dtype()), nccl_op(op), c, s));
        });
    out.bump_version();
    count_bytes_sent(
        ring::reduce_scatter_bytes_sent(in.numel(), static_cast<int64_t>(in.element_size()), world_size(), rank()));
    return work;
  }

  // NCCL has no barrier: a one-element all-reduce completes only once every rank launched it.
  std::shared_ptr<Work> barrier_impl() override {
    return launch(describe_collective("barrier", Tensor()), {barrier_scratch_}, [&](ncclComm_t c, cudaStream_t s) {
      DUET_NCCL_CHECK(
          ncclAllReduce(barrier_scratch_.data_ptr(), barrier_scratch_.data_ptr(), 1, ncclFloat32, ncclSum, c, s));
    });
  }

 private:
  static size_t count(const Tensor& t) { return static_cast<size_t>(t.numel()); }

  // Orders the communication stream after the compute stream's queued work, enqueues the
  // collective there and records its completion. An empty tensor moves nothing: NCCL is not
  // called (every rank has the same shape, so every rank skips it).
  template <class Enqueue>
  std::shared_ptr<Work> launch(const std::string& op, std::vector<Tensor> tensors, Enqueue enqueue) {
    std::lock_guard lock(state_->mutex);
    const std::string what = op + " (collective #" + std::to_string(++state_->seq) + ")";
    state_->throw_if_failed(what);
    DUET_CHECK(state_->comm, what, " on rank ", rank(), ": the NCCL communicator was aborted");
    cuda::DeviceGuard guard(device());
    Event inputs_ready;
    DUET_CUDA_CHECK(cudaEventRecord(inputs_ready.get(), cuda::stream(device())));
    DUET_CUDA_CHECK(cudaStreamWaitEvent(state_->comm_stream, inputs_ready.get(), 0));
    const bool moves_data = tensors.front().numel() > 0;
    auto work = std::make_shared<NcclWork>(state_, what, std::move(tensors));
    try {
      if (moves_data) enqueue(state_->comm, state_->comm_stream);
      DUET_CUDA_CHECK(cudaEventRecord(work->done_event(), state_->comm_stream));
    } catch (const std::exception& e) {
      work->launch_failed(e.what());  // dropped below, while this thread holds state_->mutex
      throw;
    }
    return work;
  }

  std::shared_ptr<RankState> state_;
  Tensor barrier_scratch_;
};

void check_nccl_device(const char* function, Device device) {
  DUET_CHECK(device.is_cuda(), function, ": NCCL moves CUDA tensors, got ", device,
             " (for CPU devices use make_local_group or make_mpi_communicator)");
  cuda::check_device(device);
}

void check_options(const char* function, const NcclOptions& options) {
  DUET_CHECK(options.timeout.count() > 0, function, ": timeout must be positive");
  DUET_CHECK(options.init_timeout.count() > 0, function, ": init_timeout must be positive");
}

// A blocking NCCL initialisation, run on a thread of its own so that the caller can stop
// waiting: a rank that never joins (dead, stuck, or given another id) would otherwise block
// ncclCommInitRank forever. On timeout the thread is left behind, blocked inside NCCL (nothing
// can interrupt it), owning only its state.
struct InitState {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  ncclResult_t result = ncclSuccess;
  std::vector<ncclComm_t> comms;
};

std::vector<ncclComm_t> init_with_timeout(size_t count, std::function<ncclResult_t(ncclComm_t*)> init,
                                          std::chrono::milliseconds timeout, const std::string& what) {
  auto state = std::make_shared<InitState>();
  state->comms.assign(count, nullptr);
  std::thread([state, init = std::move(init)] {
    const ncclResult_t result = init(state->comms.data());
    {
      std::lock_guard lock(state->mutex);
      state->result = result;
      state->done = true;
    }
    state->done_cv.notify_all();
  }).detach();
  std::unique_lock lock(state->mutex);
  DUET_CHECK(state->done_cv.wait_for(lock, timeout, [&] { return state->done; }), what, " timed out after ",
             timeout.count(), " ms: a rank never joined (it died, is stuck, or was given another NCCL id)");
  DUET_CHECK(state->result == ncclSuccess, what, " failed: ", ncclGetErrorString(state->result));
  return state->comms;
}

// The warm-up: one all-reduce of one element over every rank, issued from this thread as one NCCL
// group and waited for under `timeout`, on a thread of its own as the initialisation (which the
// thread outlives, blocked in NCCL, if it times out). Not counted in any rank's stats.
void connect_group(const std::vector<std::shared_ptr<RankState>>& states, std::chrono::milliseconds timeout) {
  std::vector<Tensor> scratch;
  for (const auto& state : states) scratch.push_back(zeros({1}, {.device = state->device}));
  for (const auto& state : states) cuda::synchronize(state->device);  // the zeros are written
  try {
    init_with_timeout(
        0,
        [states, scratch](ncclComm_t*) {
          ncclResult_t result = ncclGroupStart();
          for (size_t r = 0; r < states.size() && result == ncclSuccess; ++r)
            result = ncclAllReduce(scratch[r].data_ptr(), scratch[r].data_ptr(), 1, ncclFloat32, ncclSum,
                                   states[r]->comm, states[r]->comm_stream);
          const ncclResult_t ended = ncclGroupEnd();
          if (result == ncclSuccess) result = ended;
          for (size_t r = 0; r < states.size() && result == ncclSuccess; ++r)
            if (cuda::ignore_cuda_error(cudaStreamSynchronize(states[r]->comm_stream)) != cudaSuccess)
              result = ncclUnhandledCudaError;
          return result;
        },
        timeout, "make_nccl_group: connecting the " + std::to_string(states.size()) + " ranks (a warm-up all-reduce)");
  } catch (const Error& e) {
    // Aborting ends the warm-up still blocked in NCCL, so that no destructor waits for it.
    for (const auto& state : states) {
      std::lock_guard lock(state->mutex);
      state->fail(e.what());
    }
    throw;
  }
}

}  // namespace

bool nccl_is_built() noexcept { return true; }

std::vector<std::shared_ptr<Communicator>> make_nccl_group(const std::vector<Device>& devices, NcclOptions options) {
  DUET_CHECK(!devices.empty(), "make_nccl_group: no devices");
  check_options("make_nccl_group", options);
  std::vector<int> physical;
  std::unordered_set<Device> seen;
  for (const Device& d : devices) {
    check_nccl_device("make_nccl_group", d);
    DUET_CHECK(seen.insert(d).second, "make_nccl_group: ", d, " appears twice; the devices must be distinct");
    physical.push_back(cuda::physical_device(d.index));
  }
  check_distinct_gpus("make_nccl_group", devices, physical);
  const int n = static_cast<int>(devices.size());
  std::vector<ncclComm_t> comms = init_with_timeout(
      devices.size(), [n, physical](ncclComm_t* out) { return ncclCommInitAll(out, n, physical.data()); },
      options.init_timeout, "make_nccl_group: creating the NCCL group of " + std::to_string(n) + " GPUs");

  auto group = std::make_shared<GroupFailure>();
  std::vector<std::shared_ptr<RankState>> states;
  try {
    for (int r = 0; r < n; ++r) {
      // From here on the RankState owns comms[r] (and destroys it should its constructor throw).
      ncclComm_t comm = std::exchange(comms[static_cast<size_t>(r)], nullptr);
      states.push_back(std::make_shared<RankState>(comm, r, n, devices[static_cast<size_t>(r)], options, group));
    }
  } catch (...) {
    for (ncclComm_t comm : comms)
      if (comm) ncclCommDestroy(comm);
    throw;
  }
  connect_group(states, options.init_timeout);
  std::vector<std::shared_ptr<Communicator>> out;
  for (auto& state : states) out.push_back(std::make_shared<NcclCommunicator>(std::move(state)));
  return out;
}

std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Communicator> bootstrap, NcclOptions options) {
  DUET_CHECK(bootstrap, "make_nccl_communicator: no bootstrap communicator");
  // The GPU of this process's rank on its machine, from MPI's MPI_COMM_TYPE_SHARED split.
  const MpiLocality node = mpi_locality();
  const int gpus = cuda::device_count();
  DUET_CHECK(node.local_rank < gpus, "make_nccl_communicator: this process is rank ", node.local_rank, " of the ",
             node.local_size, " processes on its machine, which has ", gpus,
             " GPU(s): start at most one process "
             "per GPU");
  return make_nccl_communicator(std::move(bootstrap), cuda_device(node.local_rank), options);
}

std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Communicator> bootstrap, Device device,
                                                     NcclOptions options) {
  DUET_CHECK(bootstrap, "make_nccl_communicator: no bootstrap communicator");
  DUET_CHECK(bootstrap->device().is_cpu(),
             "make_nccl_communicator: the bootstrap communicator must move host "
             "tensors (the MPI one), got ",
             bootstrap->name(), " on ", bootstrap->device());
  check_nccl_device("make_nccl_communicator", device);
  refuse_virtual_device("make_nccl_communicator", device, cuda::physical_device(device.index), cuda::virtual_devices());
  check_options("make_nccl_communicator", options);

  // Rank 0's unique id, as raw bytes in a u8 tensor, is what ties the processes' ranks together.
  ncclUniqueId id{};
  Tensor id_bytes = empty({static_cast<int64_t>(sizeof(id))}, {.dtype = DType::u8, .device = bootstrap->device()});
  if (bootstrap->rank() == 0) {
    DUET_NCCL_CHECK(ncclGetUniqueId(&id));
    std::memcpy(id_bytes.data_ptr(), &id, sizeof(id));
  }
  bootstrap->broadcast(id_bytes, 0);
  std::memcpy(&id, id_bytes.data_ptr(), sizeof(id));

  const int rank = bootstrap->rank(), size = bootstrap->world_size();
  ncclComm_t comm = nullptr;
  try {
    comm = init_with_timeout(
        1,
        [device, size, id, rank](ncclComm_t* out) {
          cuda::DeviceGuard guard(device);
          return ncclCommInitRank(out, size, id, rank);
        },
        options.init_timeout,
        "make_nccl_communicator: rank " + std::to_string(rank) + " of " + std::to_string(size) +
            " creating the NCCL "
            "group on " +
            device.str())[0];
  } catch (const Error& e) {
    bootstrap->abort(e.what());  // the other ranks are blocked in NCCL too: end them (MPI ends the job)
    throw;
  }
  auto group = std::make_shared<GroupFailure>(std::move(bootstrap));
  return std::make_shared<NcclCommunicator>(std::make_shared<RankState>(comm, rank, size, device, options, group));
}

}  // namespace duet::parallel

#endif  // DUET_HAS_NCCL
