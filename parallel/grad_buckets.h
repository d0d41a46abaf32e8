// Gradient buckets for strategy B (DistributedDataParallel), after PyTorch's DDP Reducer.
//
// Why buckets: one all-reduce per parameter pays the latency N times over; one all-reduce of
// everything after backward cannot overlap backward. So the gradients are packed into a few
// flat buckets, and each bucket is all-reduced (asynchronously, on the communicator's thread)
// as soon as backward has produced all of its gradients, while backward goes on computing the
// earlier layers' gradients.
//
// Why REVERSE parameter order: backward produces the last layers' gradients first, so bucket 0
// holds the last parameters and fills first. Its cap is small (about 1 MiB), so the first
// all-reduce starts early; the later buckets are large (about 25 MiB), to pay less latency.
//
// Why a FIXED launch order: every rank must issue the same collectives in the same order, but
// the order in which gradients become ready can differ between ranks (threads race). So bucket
// k+1 is never launched before bucket k, even when it is ready first: it waits.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "duet/core/tensor.h"
#include "duet/parallel/comm/communicator.h"

namespace duet::parallel {

// Which parameters go in which bucket: the same on every rank, built from the shapes alone.
struct BucketLayout {
  struct Entry {
    size_t param;    // index in parameters() order
    int64_t offset;  // in elements, within the bucket's flat tensor
  };
  struct Bucket {
    std::vector<Entry> entries;  // in reverse parameter order
    int64_t numel = 0;
    DType dtype = DType::f32;
  };
  std::vector<Bucket> buckets;
  std::vector<std::pair<size_t, size_t>> slot;  // slot[param] = (bucket, entry)
};

// Walks the parameters from last to first, closing a bucket when the next gradient would take
// it past its cap (first_cap_bytes for bucket 0, cap_bytes after) or has another dtype. A
// parameter larger than the cap gets a bucket of its own.
BucketLayout plan_buckets(const std::vector<Tensor>& params, int64_t first_cap_bytes, int64_t cap_bytes);

// One rank's reducer: owns its flat buckets and the post-accumulate-grad hooks on its
// replica's parameters.
class BucketReducer : public std::enable_shared_from_this<BucketReducer> {
 public:
  // Allocates the flat buckets on comm's device and hooks every parameter. The hooks hold the
  // reducer weakly (rank 0's parameters are the user's model, which may outlive it) and do
  // nothing unless a step is armed.
  static std::shared_ptr<BucketReducer> create(std::shared_ptr<const BucketLayout> layout,
                                               std::vector<Tensor> params, std::shared_ptr<Communicator> comm);

  // Arms the hooks for one backward: each gradient is multiplied by `scale` as it is copied
  // into its bucket, and the buckets are all-reduced with `op`.
  void prepare(double scale, ReduceOp op);
  // After backward (or instead of it, for a rank with no examples): zero-fills the slots of
  // gradients that never came (unused parameters, or no backward), launches what is left in
  // order, waits for every bucket, and copies the reduced buckets back into the .grad tensors.
  void finish();

  // The bucket indices in the order this rank became ready / launched them, last step.
  std::vector<size_t> ready_order() const;
  std::vector<size_t> launch_order() const;

 private:
  BucketReducer(std::shared_ptr<const BucketLayout> layout, std::vector<Tensor> params,
                std::shared_ptr<Communicator> comm);
  void on_grad_ready(size_t param);  // the hook's body
  Tensor slot_view(size_t param) const;  // the param's place in its bucket, shaped like it
  void mark_ready(size_t bucket);        // with mutex_ held; launches what is next in order

  std::shared_ptr<const BucketLayout> layout_;
  std::vector<Tensor> params_;
  std::shared_ptr<Communicator> comm_;
  std::vector<Tensor> flat_;  // one contiguous tensor per bucket, on comm_->device()

  mutable std::mutex mutex_;  // hooks may run on the engine's device thread
  bool armed_ = false;
  double scale_ = 1;
  ReduceOp op_ = ReduceOp::sum;
  std::vector<bool> arrived_;         // per parameter
  std::vector<int64_t> pending_;      // per bucket: gradients still missing
  std::vector<bool> ready_;           // per bucket
  size_t next_launch_ = 0;            // the fixed order: buckets launch as 0, 1, 2, ...
  std::vector<std::shared_ptr<Work>> works_;
  std::vector<size_t> ready_log_, launch_log_;
};

}  // namespace duet::parallel
