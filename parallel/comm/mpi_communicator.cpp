// MPI communicator (OpenMPI). Compiled only with MPI (DUET_HAS_MPI); only parallel/ includes mpi.h.
//
// Threading: every MPI call of a collective is made from the rank's comm thread, one at a
// time (construction and destruction run on the caller's thread while that thread is idle),
// so MPI_THREAD_SERIALIZED suffices and in-order completion comes from the queue, as for the
// local group. When duet initialises MPI it asks for MPI_THREAD_MULTIPLE anyway, so that the
// caller's own MPI use (the NCCL bootstrap) may overlap ours when the library allows it.
#ifdef DUET_HAS_MPI

// The C API only: no MPI C++ bindings, which would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "duet/core/error.h"
#include "duet/parallel/comm/comm_thread.h"
#include "duet/parallel/comm/mpi_communicator.h"
#include "duet/parallel/comm/ring.h"

namespace duet::parallel {
namespace {

// How long a collective waits before its rank says that it is waiting, and for whom.
constexpr auto kWaitNotice = std::chrono::seconds(5);

void check_mpi(int code, const std::string& what) {
  if (code == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, message, &length);
  DUET_FAIL("MPI: ", what, " failed: ", std::string(message, static_cast<size_t>(length)));
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void ensure_initialised() {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  int initialised = 0, finalized = 0, provided = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalized);
  DUET_CHECK(!finalized, "make_mpi_communicator: MPI has already been finalised");
  if (!initialised) {
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    std::atexit(finalize_at_exit);  // a rank that ends without MPI_Finalize aborts the job
  } else {
    check_mpi(MPI_Query_thread(&provided), "MPI_Query_thread");
  }
  DUET_CHECK(provided >= MPI_THREAD_SERIALIZED, "make_mpi_communicator: MPI provides thread level ", provided,
             ", but the communicator calls MPI from its own thread and needs MPI_THREAD_SERIALIZED "
             "(initialise MPI with MPI_Init_thread)");
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::i64:
      return MPI_INT64_T;
    case DType::u8:
      return MPI_UINT8_T;
  }
  DUET_FAIL("MPI: unknown dtype ", static_cast<int>(dtype));
}

int mpi_count(const Tensor& t) {
  DUET_CHECK(t.numel() <= INT_MAX, "MPI: ", t.describe(), " has more than INT_MAX elements");
  return static_cast<int>(t.numel());
}

class MpiCommunicator final : public QueuedCommunicator {
 public:
  explicit MpiCommunicator(MpiOptions options) : options_(options) {
    DUET_CHECK(options.device.is_cpu(),
               "make_mpi_communicator: the MPI communicator moves host tensors, so its "
               "device must be a CPU device, got ",
               options.device);
    DUET_CHECK(options.timeout.count() > 0, "make_mpi_communicator: timeout must be positive");
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    // A communicator of our own, so duet's collectives never match the user's messages.
    start("MPI_Comm_idup", [&](MPI_Request* r) { return MPI_Comm_idup(MPI_COMM_WORLD, &comm_, r); });
  }

  ~MpiCommunicator() override {
    stop();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  Device device() const override { return options_.device; }
  std::string name() const override { return "mpi"; }
  [[noreturn]] void abort(const std::string& reason) override { abort_job(reason); }

 protected:
  void run_all_reduce(const Tensor& t, ReduceOp op) override {
    start(numbered(describe_collective("all_reduce", t, parallel::name(op))), [&](MPI_Request* r) {
      return MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), mpi_count(t), mpi_type(t.dtype()), MPI_SUM, comm_, r);
    });
    if (op == ReduceOp::avg) divide_in_place(t, size_);
    count_bytes_sent(ring::all_reduce_bytes_sent(t.numel(), static_cast<int64_t>(t.element_size()), size_, rank_));
  }

  void run_broadcast(const Tensor& t, int root) override {
    start(numbered(describe_collective("broadcast", t, "root " + std::to_string(root))),
          [&](MPI_Request* r) { return MPI_Ibcast(t.data_ptr(), mpi_count(t), mpi_type(t.dtype()), root, comm_, r); });
    if (rank_ == root) count_bytes_sent((size_ - 1) * t.nbytes());
  }

  void run_reduce(const Tensor& t, int root, ReduceOp op) override {
    start(numbered(describe_collective("reduce", t, "root " + std::to_string(root) + ", " + parallel::name(op))),
          [&](MPI_Request* r) {
            const bool is_root = rank_ == root;
            return MPI_Ireduce(is_root ? MPI_IN_PLACE : t.data_ptr(), is_root ? t.data_ptr() : nullptr, mpi_count(t),
                               mpi_type(t.dtype()), MPI_SUM, root, comm_, r);
          });
    if (rank_ == root && op == ReduceOp::avg) divide_in_place(t, size_);
    if (rank_ != root) count_bytes_sent(t.nbytes());
  }

  // In place (t is out's chunk rank_), MPI wants MPI_IN_PLACE: it forbids aliased buffers.
  void run_all_gather(const Tensor& t, const Tensor& out) override {
    start(numbered(describe_collective("all_gather", t)), [&](MPI_Request* r) {
      MPI_Datatype type = mpi_type(t.dtype());
      const bool in_place = t.numel() > 0 && t.data_ptr() == static_cast<char*>(out.data_ptr()) + rank_ * t.nbytes();
      return MPI_Iallgather(in_place ? MPI_IN_PLACE : t.data_ptr(), mpi_count(t), type, out.data_ptr(), mpi_count(t),
                            type, comm_, r);
    });
    count_bytes_sent((size_ - 1) * t.nbytes());
  }

  void run_reduce_scatter(const Tensor& in, const Tensor& out, ReduceOp op) override {
    start(numbered(describe_collective("reduce_scatter", in, parallel::name(op))), [&](MPI_Request* r) {
      return MPI_Ireduce_scatter_block(in.data_ptr(), out.data_ptr(), mpi_count(out), mpi_type(in.dtype()), MPI_SUM,
                                       comm_, r);
    });
    if (op == ReduceOp::avg) divide_in_place(out, size_);
    count_bytes_sent(
        ring::reduce_scatter_bytes_sent(in.numel(), static_cast<int64_t>(in.element_size()), size_, rank_));
  }

  void run_barrier() override {
    start(numbered(describe_collective("barrier", Tensor())), [&](MPI_Request* r) { return MPI_Ibarrier(comm_, r); });
  }

 private:
  // "all_reduce(f32[7], sum) (collective #3)": user collectives count from 1, as in the local group.
  std::string numbered(const std::string& what) { return what + " (collective #" + std::to_string(++seq_) + ")"; }

  // Starts one non-blocking MPI call and polls it until it completes or the timeout expires.
  // A wait longer than kWaitNotice is reported once, so that a job whose ranks do not meet
  // says where it waits long before the timeout ends it.
  template <class Call> void start(const std::string& where, Call call) {
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(call(&request), where);
    const auto begun = std::chrono::steady_clock::now();
    const auto deadline = begun + options_.timeout;
    bool noticed = false;
    for (int polls = 0;; ++polls) {
      int done = 0;
      check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), where);
      if (done) return;
      const auto now = std::chrono::steady_clock::now();
      if (!noticed && now - begun >= kWaitNotice && now < deadline) {
        noticed = true;
        report_wait(where, now - begun);
      }
      if (now >= deadline) {
        abort_job(where + " timed out after " + std::to_string(options_.timeout.count()) +
                  " ms: a rank died, is stuck, or issued a different collective");
      }
      // Spin briefly for latency, then back off so a waiting rank leaves the cores to compute.
      if (polls < 1000) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  // "duet: MPI rank 1 of 3: waiting 5 s in broadcast(...) for ranks 0, 2 to join it; ..." MPI
  // does not say which of the other ranks have joined, so all of them are named.
  void report_wait(const std::string& where, std::chrono::steady_clock::duration waited) const {
    std::string others;
    if (size_ > 9) {
      others = "the other " + std::to_string(size_ - 1) + " ranks";
    } else {
      for (int r = 0; r < size_; ++r) {
        if (r != rank_) others += (others.empty() ? "rank " : ", ") + std::to_string(r);
      }
      if (size_ > 2) others.replace(0, 4, "ranks");
    }
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(waited).count();
    std::fprintf(stderr,
                 "duet: MPI rank %d of %d: waiting %lld s in %s for %s to join it; the job fails after %lld ms\n",
                 rank_, size_, static_cast<long long>(seconds), where.c_str(), others.c_str(),
                 static_cast<long long>(options_.timeout.count()));
    std::fflush(stderr);
  }

  // An exception would end only this rank, and the others would wait out their own timeouts
  // (or forever, outside a collective): MPI_Abort ends the whole job at once.
  [[noreturn]] void abort_job(const std::string& why) const {
    std::fprintf(stderr, "duet: MPI rank %d of %d: %s; aborting the job\n", rank_, size_, why.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);  // MPI_Abort does not return; this keeps [[noreturn]] honest if it did
  }

  MpiOptions options_;
  int rank_ = 0;
  int size_ = 1;
  MPI_Comm comm_ = MPI_COMM_NULL;
  uint64_t seq_ = 0;  // only the comm thread counts
};

}  // namespace

bool mpi_is_built() noexcept { return true; }

std::shared_ptr<Communicator> make_mpi_communicator(MpiOptions options) {
  ensure_initialised();
  return std::make_shared<MpiCommunicator>(options);
}

MpiLocality mpi_locality() {
  ensure_initialised();
  static const MpiLocality locality = [] {
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
              "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
    MpiLocality out;
    check_mpi(MPI_Comm_rank(node, &out.local_rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(node, &out.local_size), "MPI_Comm_size");
    MPI_Comm_free(&node);
    return out;
  }();
  return locality;
}

}  // namespace duet::parallel

#endif  // DUET_HAS_MPI
