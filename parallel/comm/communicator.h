// Communicator: one rank's end of a process group (docs/parallel-strategies.md). Each rank holds its
// own Communicator, so the code for one rank reads like single-device code plus collectives.
//
// Collectives run in the order they are issued, and every rank must issue the same ones in the
// same order (DDP launches its buckets in a fixed order); async ones complete in that order.
// Implementations: local (in-process ranks, ring or naive), MPI (one process per rank) and
// NCCL (one rank per GPU). Nothing here assumes host memory: a tensor lives on the rank's device().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "duet/core/tensor.h"
#include "duet/parallel/comm/grad_compression.h"

namespace duet::parallel {

enum class ReduceOp : uint8_t { sum, avg };  // avg: the sum divided by world_size()
const char* name(ReduceOp op);

// How long any blocking wait for the other ranks lasts before it fails (local: throws
// duet::Error; MPI: aborts the job). Long enough for a slow rank's forward and backward.
inline constexpr std::chrono::milliseconds kDefaultCommTimeout{300'000};

// Completion of an asynchronous collective.
class Work {
 public:
  virtual ~Work() = default;
  // Blocks until the collective has finished on this rank; throws its error (a duet::Error).
  // May be called more than once.
  virtual void wait() = 0;
  // When the collective finished on this rank, once it has (for the trace and the overlap
  // figures). The local and MPI communicators stamp it on their thread as the collective ends;
  // NCCL's is when a wait() first saw the GPU done, so it can be late.
  virtual std::optional<std::chrono::steady_clock::time_point> finished_at() const = 0;
};

struct CommStats {
  int64_t bytes_sent = 0;  // payload this rank sent (see each implementation for the model)
  int64_t calls = 0;       // collectives issued
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual Device device() const = 0;     // where this rank's tensors must live
  virtual std::string name() const = 0;  // "local-ring", "local-naive", "mpi"

  // Every tensor argument must be contiguous, on device(), with the same dtype and shape on
  // every rank. In-place results overwrite the tensor's data without autograd (it may be a
  // parameter) and bump its version.

  // Reduces t over all ranks, in place on every rank. t must stay alive and untouched until
  // wait() returns.
  std::shared_ptr<Work> all_reduce_async(const Tensor& t, ReduceOp op = ReduceOp::sum);
  void all_reduce(const Tensor& t, ReduceOp op = ReduceOp::sum);
  // The same for an f32 t whose values travel as 16-bit `format` codes (grad_compression.h):
  // half the bytes. Every rank ends with the same values: each rank's t rounded to `format`,
  // summed in f32 in rank order (for avg, divided by world_size()), and that sum rounded to
  // `format` once more. Summing the received values in f32 and in one fixed order, rather than
  // rounding a partial sum at every hop as a 16-bit ring does, keeps the result exact up to
  // those roundings and independent of chunks and algorithm, so that single-device training can
  // reproduce it (the per-step check). With format none it is all_reduce_async. Only a
  // communicator whose compresses() is true takes fp16 or bf16.
  std::shared_ptr<Work> all_reduce_compressed_async(const Tensor& t, GradCompression format,
                                                    ReduceOp op = ReduceOp::sum);
  void all_reduce_compressed(const Tensor& t, GradCompression format, ReduceOp op = ReduceOp::sum);
  virtual bool compresses() const { return false; }
  // Copies root's t into t on every other rank.
  void broadcast(const Tensor& t, int root);
  // Leaves the reduction in root's t; the other ranks' t are left unchanged.
  void reduce(const Tensor& t, int root, ReduceOp op = ReduceOp::sum);
  // Every rank's t, in rank order, as new tensors on this rank's device (this rank's own
  // entry is a copy too).
  std::vector<Tensor> all_gather(const Tensor& t);

  // The two halves of a ring all-reduce, over flat buffers: what a sharded optimizer (ZeRO-1)
  // runs instead of all_reduce. A rank's `in` and `out` must stay alive until wait() returns;
  // `in` must not be written and `out` not read before then. Both may have any shape: only
  // their number of elements matters.
  //
  // Reduce-scatter (MPI_Reduce_scatter_block, ncclReduceScatter): `in` holds world_size()
  // chunks of out.numel() elements each, back to back; rank r's `out` receives chunk r reduced
  // over all ranks. `in` is left unchanged and must not overlap `out`. A buffer whose size
  // world_size() does not divide is refused, not split unevenly: the caller pads it (a sharded
  // optimizer pads its flattened parameters with zeros to a multiple of world_size(), so one
  // tensor may span two ranks' chunks, and the last chunk ends in padding).
  std::shared_ptr<Work> reduce_scatter_async(const Tensor& in, const Tensor& out, ReduceOp op = ReduceOp::sum);
  void reduce_scatter(const Tensor& in, const Tensor& out, ReduceOp op = ReduceOp::sum);
  // All-gather into a buffer (MPI_Allgather, ncclAllGather): `out` holds world_size() chunks of
  // in.numel() elements each, and chunk q receives rank q's `in`, on every rank. `in` may be
  // out's own chunk rank() (in place: the rank's shard of a flat buffer) but must not overlap
  // `out` otherwise. Issued under the same name as all_gather: the two forms match each other.
  std::shared_ptr<Work> all_gather_into_async(const Tensor& in, const Tensor& out);
  void all_gather_into(const Tensor& in, const Tensor& out);
  // Returns once every rank has called barrier().
  void barrier();

  // Fails the whole group at once because this rank cannot go on (its forward threw, say):
  // the other ranks' pending and later collectives fail instead of waiting out the timeout.
  // Local: they throw a duet::Error naming this rank and `reason`. MPI: the job ends.
  virtual void abort(const std::string& reason) = 0;

  // Counters for `duet compare`'s bytes-per-step column; safe to read while collectives run.
  CommStats stats() const;
  void reset_stats();

 protected:
  // The implementations' part, with arguments already checked. all_gather_impl fills `out`,
  // contiguous, on device(), of world_size() * t.numel() elements (t may be out's chunk
  // rank()); reduce_scatter_impl reads world_size() * out.numel() elements of `in`, which does
  // not overlap `out`. Both write `out` in place and bump its version.
  virtual std::shared_ptr<Work> all_reduce_impl(const Tensor& t, ReduceOp op) = 0;
  virtual std::shared_ptr<Work> broadcast_impl(const Tensor& t, int root) = 0;
  virtual std::shared_ptr<Work> reduce_impl(const Tensor& t, int root, ReduceOp op) = 0;
  virtual std::shared_ptr<Work> all_gather_impl(const Tensor& t, const Tensor& out) = 0;
  virtual std::shared_ptr<Work> reduce_scatter_impl(const Tensor& in, const Tensor& out, ReduceOp op) = 0;
  virtual std::shared_ptr<Work> barrier_impl() = 0;
  // Called only where compresses() is true, with fp16 or bf16 and an f32 t.
  virtual std::shared_ptr<Work> all_reduce_compressed_impl(const Tensor& t, GradCompression format, ReduceOp op);

  void count_bytes_sent(int64_t bytes) { bytes_sent_.fetch_add(bytes, std::memory_order_relaxed); }

 private:
  void check_tensor(const char* op, const Tensor& t) const;
  void check_root(const char* op, int root) const;
  void check_op(const char* op, const Tensor& t, ReduceOp reduce_op) const;
  // The buffers of a reduce-scatter (`in` holds the chunks) or of an all-gather (gather: `out`
  // does): one dtype, world_size() chunks, and no overlap but the all-gather's in-place one.
  void check_chunks(const char* op, const Tensor& in, const Tensor& out, bool gather) const;
  void count_call() { calls_.fetch_add(1, std::memory_order_relaxed); }

  std::atomic<int64_t> bytes_sent_{0};
  std::atomic<int64_t> calls_{0};
};

// "all_reduce(f32[7], avg)": names a call in errors; equal on every rank for one collective.
std::string describe_collective(const char* op, const Tensor& t, const std::string& detail = "");

// t /= divisor in place, on t's device (the avg of ReduceOp).
void divide_in_place(const Tensor& t, int64_t divisor);

}  // namespace duet::parallel
