// The checks every communicator shares, and the public calls built on the implementations'
// async entry points.
#include "duet/parallel/comm/communicator.h"

#include "duet/autograd/factory.h"
#include "duet/core/error.h"
#include "duet/kernels/kernels.h"

namespace duet::parallel {

const char* name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::avg:
      return "avg";
  }
  return "unknown reduce op";
}

std::string describe_collective(const char* op, const Tensor& t, const std::string& detail) {
  std::string out = std::string(op) + "(";
  if (t.defined()) out += std::string(dtype_name(t.dtype())) + shape_str(t.sizes());
  if (t.defined() && !detail.empty()) out += ", ";
  return out + detail + ")";
}

void divide_in_place(const Tensor& t, int64_t divisor) {
  if (divisor == 1 || t.numel() == 0) return;
  Tensor d = full({}, static_cast<double>(divisor), {.dtype = t.dtype(), .device = t.device()});
  kernels::binary(kernels::BinaryOp::div, t, d, t);
}

void Communicator::check_tensor(const char* op, const Tensor& t) const {
  DUET_CHECK(t.defined(), op, " on rank ", rank(), ": undefined tensor");
  DUET_CHECK(t.device() == device(), op, " on rank ", rank(), ": tensor ", t.describe(),
             " is not on the rank's device ", device());
  // Flat, contiguous buffers are what ring chunks, MPI and NCCL all need; a strided view would
  // need a hidden copy and copy-back, which would also break the in-place contract of async calls.
  DUET_CHECK(t.is_contiguous(), op, " on rank ", rank(), ": tensor ", t.describe(),
             " is not contiguous (pass .contiguous() and copy the result back)");
}

void Communicator::check_root(const char* op, int root) const {
  DUET_CHECK(root >= 0 && root < world_size(), op, " on rank ", rank(), ": root ", root,
             " is out of range for world size ", world_size());
}

void Communicator::check_op(const char* op, const Tensor& t, ReduceOp reduce_op) const {
  DUET_CHECK(reduce_op != ReduceOp::avg || is_floating(t.dtype()), op, " on rank ", rank(),
             ": avg needs a floating tensor, got ", t.describe());
}

void Communicator::check_chunks(const char* op, const Tensor& in, const Tensor& out, bool gather) const {
  check_tensor(op, in);
  check_tensor(op, out);
  DUET_CHECK(in.dtype() == out.dtype(), op, " on rank ", rank(), ": input ", in.describe(), " and output ",
             out.describe(), " differ in dtype");
  const Tensor& whole = gather ? out : in;
  const Tensor& part = gather ? in : out;
  const int64_t want = world_size() * part.numel();
  DUET_CHECK(whole.numel() == want, op, " on rank ", rank(), ": ", gather ? "output " : "input ", whole.describe(),
             " must hold world size (", world_size(), ") times the ", gather ? "input's " : "output's ", part.numel(),
             " elements, ", want,
             gather ? "" : " (a buffer that the world size does not divide is the caller's to pad with zeros)");
  const bool overlap = in.storage() == out.storage() && in.numel() > 0 && in.offset() < out.offset() + out.numel() &&
                       out.offset() < in.offset() + in.numel();
  if (!overlap) return;
  const bool own_chunk = gather && in.offset() == out.offset() + rank() * in.numel();
  DUET_CHECK(own_chunk, op, " on rank ", rank(), ": input ", in.describe(), " overlaps output ", out.describe(),
             gather ? " other than as the output's own chunk (rank " + std::to_string(rank()) + "'s, in place)"
                    : std::string(" (reduce_scatter is out of place)"));
}

std::shared_ptr<Work> Communicator::all_reduce_async(const Tensor& t, ReduceOp op) {
  check_tensor("all_reduce", t);
  check_op("all_reduce", t, op);
  count_call();
  return all_reduce_impl(t, op);
}

void Communicator::all_reduce(const Tensor& t, ReduceOp op) { all_reduce_async(t, op)->wait(); }

std::shared_ptr<Work> Communicator::all_reduce_compressed_async(const Tensor& t, GradCompression format, ReduceOp op) {
  if (format == GradCompression::none) return all_reduce_async(t, op);
  check_tensor("all_reduce_compressed", t);
  check_op("all_reduce_compressed", t, op);
  DUET_CHECK(t.dtype() == DType::f32, "all_reduce_compressed on rank ", rank(), ": ", parallel::name(format),
             " compression casts f32 values, got ", t.describe());
  DUET_CHECK(compresses(), "all_reduce_compressed on rank ", rank(), ": the ", name(), " communicator has no ",
             parallel::name(format), " compression (the local ring and naive groups have)");
  count_call();
  return all_reduce_compressed_impl(t, format, op);
}

void Communicator::all_reduce_compressed(const Tensor& t, GradCompression format, ReduceOp op) {
  all_reduce_compressed_async(t, format, op)->wait();
}

std::shared_ptr<Work> Communicator::all_reduce_compressed_impl(const Tensor&, GradCompression format, ReduceOp) {
  DUET_FAIL("all_reduce_compressed: the ", name(), " communicator has no ", parallel::name(format), " compression");
}

void Communicator::broadcast(const Tensor& t, int root) {
  check_tensor("broadcast", t);
  check_root("broadcast", root);
  count_call();
  broadcast_impl(t, root)->wait();
}

void Communicator::reduce(const Tensor& t, int root, ReduceOp op) {
  check_tensor("reduce", t);
  check_root("reduce", root);
  check_op("reduce", t, op);
  count_call();
  reduce_impl(t, root, op)->wait();
}

std::vector<Tensor> Communicator::all_gather(const Tensor& t) {
  check_tensor("all_gather", t);
  Shape sizes = t.sizes();
  sizes.insert(sizes.begin(), world_size());
  Tensor out = empty(sizes, {.dtype = t.dtype(), .device = device()});
  all_gather_into(t, out);
  // One buffer for all ranks (what MPI and NCCL gather into), handed out as per-rank views.
  std::vector<Tensor> parts;
  for (int r = 0; r < world_size(); ++r)
    parts.push_back(out.as_strided(t.sizes(), contiguous_strides(t.sizes()), r * t.numel()));
  return parts;
}

std::shared_ptr<Work> Communicator::all_gather_into_async(const Tensor& in, const Tensor& out) {
  check_chunks("all_gather", in, out, /*gather=*/true);
  count_call();
  return all_gather_impl(in, out);
}

void Communicator::all_gather_into(const Tensor& in, const Tensor& out) { all_gather_into_async(in, out)->wait(); }

std::shared_ptr<Work> Communicator::reduce_scatter_async(const Tensor& in, const Tensor& out, ReduceOp op) {
  check_chunks("reduce_scatter", in, out, /*gather=*/false);
  check_op("reduce_scatter", out, op);
  count_call();
  return reduce_scatter_impl(in, out, op);
}

void Communicator::reduce_scatter(const Tensor& in, const Tensor& out, ReduceOp op) {
  reduce_scatter_async(in, out, op)->wait();
}

void Communicator::barrier() {
  count_call();
  barrier_impl()->wait();
}

CommStats Communicator::stats() const {
  return {bytes_sent_.load(std::memory_order_relaxed), calls_.load(std::memory_order_relaxed)};
}

void Communicator::reset_stats() {
  bytes_sent_.store(0, std::memory_order_relaxed);
  calls_.store(0, std::memory_order_relaxed);
}

}  // namespace duet::parallel
