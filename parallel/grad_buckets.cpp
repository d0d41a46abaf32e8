#include "duet/parallel/grad_buckets.h"

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/core/error.h"

namespace duet::parallel {

BucketLayout plan_buckets(const std::vector<Tensor>& params, int64_t first_cap_bytes, int64_t cap_bytes) {
  DUET_CHECK(first_cap_bytes > 0 && cap_bytes > 0, "plan_buckets: the bucket caps must be positive, got ",
             first_cap_bytes, " and ", cap_bytes);
  BucketLayout layout;
  layout.slot.resize(params.size());
  int64_t bytes = 0;
  for (size_t i = params.size(); i-- > 0;) {
    const Tensor& p = params[i];
    int64_t p_bytes = p.numel() * static_cast<int64_t>(p.element_size());
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

std::shared_ptr<BucketReducer> BucketReducer::create(std::shared_ptr<const BucketLayout> layout,
                                                     std::vector<Tensor> params, std::shared_ptr<Communicator> comm) {
  std::shared_ptr<BucketReducer> reducer(new BucketReducer(std::move(layout), std::move(params), std::move(comm)));
  std::weak_ptr<BucketReducer> weak = reducer;
  for (size_t i = 0; i < reducer->params_.size(); ++i) {
    reducer->params_[i].register_post_accumulate_grad_hook([weak, i](const Tensor&) {
      if (std::shared_ptr<BucketReducer> self = weak.lock()) self->on_grad_ready(i);
    });
  }
  return reducer;
}

BucketReducer::BucketReducer(std::shared_ptr<const BucketLayout> layout, std::vector<Tensor> params,
                             std::shared_ptr<Communicator> comm)
    : layout_(std::move(layout)), params_(std::move(params)), comm_(std::move(comm)) {
  DUET_CHECK(layout_->slot.size() == params_.size(), "BucketReducer: the layout has ", layout_->slot.size(),
             " parameters, the replica ", params_.size());
  for (const BucketLayout::Bucket& b : layout_->buckets) {
    flat_.push_back(zeros({b.numel}, {.dtype = b.dtype, .device = comm_->device()}));
  }
}

Tensor BucketReducer::slot_view(size_t param) const {
  auto [b, e] = layout_->slot[param];
  const Tensor& p = params_[param];
  return flat_[b].as_strided(p.sizes(), contiguous_strides(p.sizes()), layout_->buckets[b].entries[e].offset);
}

void BucketReducer::prepare(double scale, ReduceOp op) {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = true;
  scale_ = scale;
  op_ = op;
  arrived_.assign(params_.size(), false);
  pending_.clear();
  for (const BucketLayout::Bucket& b : layout_->buckets) pending_.push_back(static_cast<int64_t>(b.entries.size()));
  ready_.assign(layout_->buckets.size(), false);
  next_launch_ = 0;
  works_.assign(layout_->buckets.size(), nullptr);
  ready_log_.clear();
  launch_log_.clear();
}

void BucketReducer::on_grad_ready(size_t param) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!armed_ || arrived_[param]) return;
  // Copy the gradient into its bucket, weighted for the reduction (n_local / n_global for the
  // exact sum; 1 for DDP's average of means). The copy is what makes the bucket flat.
  NoGradGuard no_grad;
  Tensor view = slot_view(param);
  view.copy_(params_[param].grad());
  if (scale_ != 1) view.mul_(scale_);
  arrived_[param] = true;
  size_t bucket = layout_->slot[param].first;
  if (--pending_[bucket] == 0) mark_ready(bucket);
}

void BucketReducer::mark_ready(size_t bucket) {
  ready_[bucket] = true;
  ready_log_.push_back(bucket);
  // Launch strictly in bucket order: a ready bucket whose predecessor is still filling waits,
  // and is launched right after it.
  while (next_launch_ < ready_.size() && ready_[next_launch_]) {
    works_[next_launch_] = comm_->all_reduce_async(flat_[next_launch_], op_);
    launch_log_.push_back(next_launch_);
    ++next_launch_;
  }
}

void BucketReducer::finish() {
  std::vector<std::shared_ptr<Work>> works;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    DUET_CHECK(armed_, "BucketReducer::finish without prepare");
    NoGradGuard no_grad;
    // A gradient that never came contributes zeros, so every rank still launches every bucket.
    for (size_t b = 0; b < layout_->buckets.size(); ++b) {
      if (ready_[b]) continue;
      for (const BucketLayout::Entry& e : layout_->buckets[b].entries) {
        if (!arrived_[e.param]) slot_view(e.param).zero_();
      }
      mark_ready(b);
    }
    armed_ = false;
    works = works_;
  }
  // Every bucket finished before step(): they complete in launch order.
  for (const std::shared_ptr<Work>& w : works) w->wait();
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor view = slot_view(i);
    if (params_[i].grad().defined()) {
      params_[i].grad().copy_(view);
    } else {
      params_[i].set_grad(view.clone());  // unused here, but reduced from the other ranks
    }
  }
}

std::vector<size_t> BucketReducer::ready_order() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ready_log_;
}

std::vector<size_t> BucketReducer::launch_order() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return launch_log_;
}

}  // namespace duet::parallel
