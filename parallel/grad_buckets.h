// Gradient buckets for strategy B (DistributedDataParallel), after PyTorch's DDP Reducer.
//
// Why buckets: one all-reduce per parameter pays the latency N times over; one all-reduce of
// everything after backward cannot overlap backward. So the gradients are packed into a few
// flat buckets, and each bucket is all-reduced (asynchronously, on the communicator's thread)
// as soon as backward has produced all of its gradients, while backward goes on computing the
// earlier layers' gradients.
//
// Why REVERSE parameter order at first: backward usually produces the last layers' gradients
// first, so bucket 0 holds the last parameters and fills first. Its cap is small (about 1 MiB),
// so the first all-reduce starts early; the later buckets are large (about 25 MiB), to pay
// less latency. After the first step the buckets are planned again, once, in the order in
// which the gradients really arrived (rank 0's), as PyTorch's rebuild_buckets does: a model
// whose registration order is not its use order gets buckets that fill in order.
//
// Why a FIXED launch order: every rank must issue the same collectives in the same order, but
// the order in which gradients become ready can differ between ranks (threads race). So bucket
// k+1 is never launched before bucket k, even when it is ready first: it waits.
//
// Unused parameters (find_unused_parameters): a parameter whose gradient never came is zero in
// its bucket, and a map of which parameters each rank used is all-reduced after the buckets. A
// parameter that no rank used keeps an undefined .grad, as in single-device training, so the
// optimizer skips it (no weight decay, no momentum) exactly as single-device training would.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "duet/core/tensor.h"
#include "duet/parallel/comm/communicator.h"
#include "duet/parallel/phase_times.h"

namespace duet::parallel {

// Which parameters go in which bucket: the same on every rank, built from the shapes alone.
struct BucketLayout {
  struct Entry {
    size_t param;    // index in parameters() order
    int64_t offset;  // in elements, within the bucket's flat tensor
  };
  struct Bucket {
    std::vector<Entry> entries;  // in the order the plan walked them
    int64_t numel = 0;
    DType dtype = DType::f32;
  };
  std::vector<Bucket> buckets;
  std::vector<std::pair<size_t, size_t>> slot;  // slot[param] = (bucket, entry)
};

// Walks the parameters in `order` (empty: from last to first), closing a bucket when the next
// gradient would take it past its cap (first_cap_bytes for bucket 0, cap_bytes after) or has
// another dtype. A parameter larger than the cap gets a bucket of its own. `order` must list
// every parameter once.
BucketLayout plan_buckets(const std::vector<Tensor>& params, int64_t first_cap_bytes, int64_t cap_bytes,
                          const std::vector<size_t>& order = {});

// 1 for every parameter whose .grad is defined, as an f32 vector on `device`: summed over the
// ranks, a 0 marks a parameter that no rank used.
Tensor local_usage(const std::vector<Tensor>& params, Device device);

// What a ready bucket is launched with: ddp's all-reduce, or zero1's reduce-scatter, after which
// each rank holds the reduced sum of its chunk of every bucket only (sharded_optimizer.h).
enum class BucketCollective : uint8_t { all_reduce, reduce_scatter };

// Reduce-scatter needs world_size() equal chunks: a bucket of `numel` elements is padded with
// zeros to world_size * bucket_chunk(numel, world_size), and rank r owns chunk r.
int64_t bucket_chunk(int64_t numel, int world_size);

// One rank's reducer: owns its flat buckets and the post-accumulate-grad hooks on its
// replica's parameters.
class BucketReducer : public std::enable_shared_from_this<BucketReducer> {
 public:
  // Allocates the flat buckets on comm's device and hooks every parameter; the buckets are
  // all-reduced as `compression` says (ddp_options.h). The hooks hold the
  // reducer weakly (rank 0's parameters are the user's model, which may outlive it) and do
  // nothing unless a step is armed.
  static std::shared_ptr<BucketReducer> create(std::shared_ptr<const BucketLayout> layout, std::vector<Tensor> params,
                                               std::shared_ptr<Communicator> comm,
                                               BucketCollective collective = BucketCollective::all_reduce,
                                               GradCompression compression = GradCompression::none);

  // Arms the hooks for one backward: the buckets are all-reduced with `op`. A gradient already
  // accumulated in .grad (earlier micro-batches, without sync) is part of what the hook sees.
  void prepare(ReduceOp op);
  // After backward (or instead of it, for a rank with no examples): fills the slots of the
  // gradients whose hook never fired (from .grad when it holds accumulated micro-batches,
  // zeros otherwise), launches what is left in order and the map of used parameters, waits
  // for all of it, and copies the reduced buckets back into the .grad of every parameter that
  // some rank used. Reduce-scatter: the .grad are left as this rank's backward made them, and
  // the reduced chunks are in reduced_chunk().
  void finish();
  // Swaps in another layout (the rebuilt buckets); between steps only.
  void set_layout(std::shared_ptr<const BucketLayout> layout);

  const BucketLayout& layout() const { return *layout_; }
  // Reduce-scatter, after finish(): this rank's chunk of bucket `bucket`, reduced over the ranks.
  const Tensor& reduced_chunk(size_t bucket) const { return chunks_.at(bucket); }
  // Bucket `bucket`'s flat (padded) buffer; after finish() and until the next prepare(), free
  // for other use (zero1 all-gathers the updated parameters in it).
  const Tensor& bucket_buffer(size_t bucket) const { return flat_.at(bucket); }
  // After finish(): whether some rank used parameter `param` in the step (its .grad then holds,
  // or reduced_chunk() covers, a reduced gradient).
  bool used(size_t param) const { return used_.at(param); }

  // Last step: the bucket indices in the order this rank found them ready / launched them, and
  // the parameter indices in the order their gradients arrived.
  std::vector<size_t> ready_order() const { return locked_copy(ready_log_); }
  std::vector<size_t> launch_order() const { return locked_copy(launch_log_); }
  std::vector<size_t> grad_ready_order() const { return locked_copy(grad_log_); }
  // Last step's collectives (the buckets, then the usage map), with `track` unset (0).
  std::vector<CommEvent> comm_events() const { return locked_copy(events_); }
  // When the last gradient of the armed backward arrived (trace_us); 0 when none did.
  double last_gradient_us() const { return locked_copy(last_gradient_us_); }

 private:
  BucketReducer(std::shared_ptr<const BucketLayout> layout, std::vector<Tensor> params,
                std::shared_ptr<Communicator> comm, BucketCollective collective, GradCompression compression);
  void allocate_buckets();
  void on_grad_ready(size_t param);                  // the hook's body
  void fill_slot(size_t param, const Tensor& grad);  // with mutex_ held
  Tensor slot_view(size_t param) const;              // the param's place in its bucket, shaped like it
  void mark_ready(size_t bucket);                    // with mutex_ held; launches what is next in order
  void record_finish_times();
  template <class T> T locked_copy(const T& member) const {  // the hooks may be writing it on another thread
    std::lock_guard<std::mutex> lock(mutex_);
    return member;
  }

  std::shared_ptr<const BucketLayout> layout_;
  std::vector<Tensor> params_;
  std::shared_ptr<Communicator> comm_;
  BucketCollective collective_;
  GradCompression compression_;  // all-reduce only
  std::vector<Tensor> flat_;     // one contiguous tensor per bucket, on comm_->device(), padded for reduce-scatter
  std::vector<Tensor> chunks_;   // reduce-scatter: per bucket, this rank's reduced chunk
  std::vector<bool> used_;       // per parameter, after finish()

  mutable std::mutex mutex_;  // hooks may run on the engine's device thread
  bool armed_ = false;
  ReduceOp op_ = ReduceOp::sum;
  std::vector<bool> arrived_;                 // per parameter
  std::vector<int64_t> pending_;              // per bucket: gradients still missing
  std::vector<bool> ready_;                   // per bucket
  size_t next_launch_ = 0;                    // the fixed order: buckets launch as 0, 1, 2, ...
  std::vector<std::shared_ptr<Work>> works_;  // per bucket, then the usage map's
  std::vector<size_t> ready_log_, launch_log_, grad_log_;
  std::vector<CommEvent> events_;  // per bucket, then the usage map's
  double last_gradient_us_ = 0;
};

}  // namespace duet::parallel
