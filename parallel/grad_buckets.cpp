#include "duet/parallel/grad_buckets.h"

#include <chrono>
#include <string>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/core/error.h"

namespace duet::parallel {
namespace {

std::vector<size_t> reverse_order(size_t n) {
  std::vector<size_t> order;
  for (size_t i = n; i-- > 0;) order.push_back(i);
  return order;
}

}  // namespace

BucketLayout plan_buckets(const std::vector<Tensor>& params, int64_t first_cap_bytes, int64_t cap_bytes,
                          const std::vector<size_t>& order) {
  DUET_CHECK(first_cap_bytes > 0 && cap_bytes > 0, "plan_buckets: the bucket caps must be positive, got ",
             first_cap_bytes, " and ", cap_bytes);
  const std::vector<size_t> walk = order.empty() ? reverse_order(params.size()) : order;
  DUET_CHECK(walk.size() == params.size(), "plan_buckets: the order lists ", walk.size(), " parameters, there are ",
             params.size());
  BucketLayout layout;
  layout.slot.assign(params.size(), {SIZE_MAX, SIZE_MAX});
  int64_t bytes = 0;
  for (size_t i : walk) {
    DUET_CHECK(i < params.size() && layout.slot[i].first == SIZE_MAX,
               "plan_buckets: the order must list every "
               "parameter index below ",
               params.size(), " once, got ", i, " out of range or twice");
    const Tensor& p = params[i];
    int64_t p_bytes = p.nbytes();
    int64_t cap = layout.buckets.size() <= 1 ? first_cap_bytes : cap_bytes;
    bool open = !layout.buckets.empty();
    if (open && (bytes + p_bytes > cap || layout.buckets.back().dtype != p.dtype())) open = false;
    if (!open) {
      layout.buckets.emplace_back();
      layout.buckets.back().dtype = p.dtype();
      bytes = 0;
    }
    BucketLayout::Bucket& bucket = layout.buckets.back();
    layout.slot[i] = {layout.buckets.size() - 1, bucket.entries.size()};
    bucket.entries.push_back({i, bucket.numel});
    bucket.numel += p.numel();
    bytes += p_bytes;
  }
  return layout;
}

int64_t bucket_chunk(int64_t numel, int world_size) { return (numel + world_size - 1) / world_size; }

Tensor local_usage(const std::vector<Tensor>& params, Device device) {
  std::vector<float> used;
  for (const Tensor& p : params) used.push_back(p.grad().defined() ? 1.0f : 0.0f);
  return from_vector(used, {static_cast<int64_t>(used.size())}).to(device);
}

std::shared_ptr<BucketReducer> BucketReducer::create(std::shared_ptr<const BucketLayout> layout,
                                                     std::vector<Tensor> params, std::shared_ptr<Communicator> comm,
                                                     BucketCollective collective, GradCompression compression) {
  std::shared_ptr<BucketReducer> reducer(
      new BucketReducer(std::move(layout), std::move(params), std::move(comm), collective, compression));
  std::weak_ptr<BucketReducer> weak = reducer;
  for (size_t i = 0; i < reducer->params_.size(); ++i) {
    reducer->params_[i].register_post_accumulate_grad_hook([weak, i](const Tensor&) {
      if (std::shared_ptr<BucketReducer> self = weak.lock()) self->on_grad_ready(i);
    });
  }
  return reducer;
}

BucketReducer::BucketReducer(std::shared_ptr<const BucketLayout> layout, std::vector<Tensor> params,
                             std::shared_ptr<Communicator> comm, BucketCollective collective,
                             GradCompression compression)
    : layout_(std::move(layout)),
      params_(std::move(params)),
      comm_(std::move(comm)),
      collective_(collective),
      compression_(compression) {
  allocate_buckets();
}

void BucketReducer::allocate_buckets() {
  DUET_CHECK(layout_->slot.size() == params_.size(), "BucketReducer: the layout has ", layout_->slot.size(),
             " parameters, the replica ", params_.size());
  flat_.clear();
  chunks_.clear();
  const bool scatter = collective_ == BucketCollective::reduce_scatter;
  const int world = comm_->world_size();
  for (const BucketLayout::Bucket& b : layout_->buckets) {
    // The padding is never written: it stays zero, and reduces to zero.
    const int64_t chunk = bucket_chunk(b.numel, world);
    flat_.push_back(zeros({scatter ? chunk * world : b.numel}, {.dtype = b.dtype, .device = comm_->device()}));
    if (scatter) chunks_.push_back(zeros({chunk}, {.dtype = b.dtype, .device = comm_->device()}));
  }
}

void BucketReducer::set_layout(std::shared_ptr<const BucketLayout> layout) {
  std::lock_guard<std::mutex> lock(mutex_);
  DUET_CHECK(!armed_, "BucketReducer::set_layout during a step");
  layout_ = std::move(layout);
  allocate_buckets();
}

Tensor BucketReducer::slot_view(size_t param) const {
  auto [b, e] = layout_->slot[param];
  const Tensor& p = params_[param];
  return flat_[b].as_strided(p.sizes(), contiguous_strides(p.sizes()), layout_->buckets[b].entries[e].offset);
}

void BucketReducer::prepare(ReduceOp op) {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = true;
  op_ = op;
  arrived_.assign(params_.size(), false);
  pending_.clear();
  for (const BucketLayout::Bucket& b : layout_->buckets) pending_.push_back(static_cast<int64_t>(b.entries.size()));
  ready_.assign(layout_->buckets.size(), false);
  next_launch_ = 0;
  last_gradient_us_ = 0;
  works_.assign(layout_->buckets.size(), nullptr);
  ready_log_.clear();
  launch_log_.clear();
  grad_log_.clear();
  events_.assign(layout_->buckets.size(), {});
  for (size_t b = 0; b < events_.size(); ++b) {
    events_[b].name = "bucket " + std::to_string(b);
    const BucketLayout::Bucket& bucket = layout_->buckets[b];
    events_[b].bytes = collective_ == BucketCollective::reduce_scatter
                           ? flat_[b].nbytes()  // padded to a multiple of the ranks
                           : wire_bytes(bucket.numel, bucket.dtype, compression_);
  }
}

void BucketReducer::on_grad_ready(size_t param) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!armed_ || arrived_[param]) return;
  grad_log_.push_back(param);
  last_gradient_us_ = trace_now_us();
  fill_slot(param, params_[param].grad());
}

// The copy is what makes the bucket flat. The gradient is already weighted for the reduction:
// the strategy scaled the loss.
void BucketReducer::fill_slot(size_t param, const Tensor& grad) {
  NoGradGuard no_grad;
  Tensor view = slot_view(param);
  if (grad.defined()) {
    view.copy_(grad);
  } else {
    view.zero_();
  }
  arrived_[param] = true;
  size_t bucket = layout_->slot[param].first;
  if (--pending_[bucket] == 0) mark_ready(bucket);
}

void BucketReducer::mark_ready(size_t bucket) {
  ready_[bucket] = true;
  ready_log_.push_back(bucket);
  events_[bucket].ready_us = trace_now_us();
  // Launch strictly in bucket order: a ready bucket whose predecessor is still filling waits,
  // and is launched right after it.
  while (next_launch_ < ready_.size() && ready_[next_launch_]) {
    events_[next_launch_].launch_us = trace_now_us();
    works_[next_launch_] = collective_ == BucketCollective::reduce_scatter
                               ? comm_->reduce_scatter_async(flat_[next_launch_], chunks_[next_launch_], op_)
                               : comm_->all_reduce_compressed_async(flat_[next_launch_], compression_, op_);
    launch_log_.push_back(next_launch_);
    ++next_launch_;
  }
}

void BucketReducer::finish() {
  Tensor usage;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    DUET_CHECK(armed_, "BucketReducer::finish without prepare");
    // A hook that never fired: the parameter was unused in this backward (its .grad may still
    // hold earlier micro-batches' sum), or there was no backward. Every rank still launches
    // every bucket.
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!arrived_[i]) fill_slot(i, params_[i].grad());
    }
    armed_ = false;
    // After the buckets, in the same order on every rank: which parameters this rank used.
    usage = local_usage(params_, comm_->device());
    const double launch = trace_now_us();
    events_.push_back(
        {.name = "unused-parameter map", .ready_us = launch, .launch_us = launch, .bytes = usage.nbytes()});
    works_.push_back(comm_->all_reduce_async(usage, ReduceOp::sum));
  }
  // Every collective finished before step(): they complete in launch order.
  for (const std::shared_ptr<Work>& w : works_) w->wait();
  record_finish_times();
  const std::vector<float> used = usage.to_vector<float>();
  used_.assign(params_.size(), false);
  for (size_t i = 0; i < params_.size(); ++i) used_[i] = used[i] != 0;
  if (collective_ == BucketCollective::reduce_scatter) return;  // the sharded optimizer reads the chunks
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!used_[i]) continue;  // no rank used it: .grad stays undefined, as in single-device training
    Tensor view = slot_view(i);
    if (params_[i].grad().defined()) {
      params_[i].grad().copy_(view);
    } else {
      params_[i].set_grad(view.clone());  // unused here, but used by another rank
    }
  }
}

void BucketReducer::record_finish_times() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t k = 0; k < works_.size(); ++k) {
    if (auto at = works_[k]->finished_at()) events_[k].finish_us = trace_us(*at);
  }
}

}  // namespace duet::parallel
