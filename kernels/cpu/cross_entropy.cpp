// Fused cross-entropy on the CPU: a log-softmax per row (softmax_rows.h) and the picked
// negative log-probability; rows split over the pool.
#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/softmax_rows.h"

namespace duet::kernels::cpu {
namespace {

// Every target in [0, classes): only the kernel reads the target's memory (the shapes were checked
// by nn_dispatch.cpp). A serial pass before the parallel loop, so the error always names the
// first bad target.
void check_targets(const char* op, const Tensor& target, int64_t classes) {
  const int64_t* t = target.data<int64_t>();
  for (int64_t i = 0; i < target.numel(); ++i) {
    DUET_CHECK(t[i] >= 0 && t[i] < classes, op, ": target[", i, "] = ", t[i], " is out of range for ", classes,
               " classes (expected 0 <= target < ", classes, ")");
  }
}

}  // namespace

void cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& losses,
                           const Tensor& log_probs) {
  const char* op = "cross_entropy_forward";
  const RowLayout l = RowLayout::of(logits, 1);
  check_targets(op, target, l.size);
  if (logits.numel() == 0) return;
  dispatch_floating(logits.dtype(), op, [&]<class T>() {
    const T* x = logits.data<T>();
    T* lp = log_probs.data<T>();
    T* loss = losses.data<T>();
    const int64_t* t = target.data<int64_t>();
    parallel_for(l.rows(), grain_for(l.size), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        log_softmax_row(x + i * l.size, lp + i * l.size, l.size, 1);
        loss[i] = -lp[i * l.size + t[i]];
      }
    });
  });
}

void cross_entropy_backward(const Tensor& grad_losses, const Tensor& log_probs, const Tensor& target,
                            const Tensor& grad_logits) {
  const char* op = "cross_entropy_backward";
  const int64_t classes = log_probs.size(1);
  check_targets(op, target, classes);
  if (log_probs.numel() == 0) return;
  dispatch_floating(log_probs.dtype(), op, [&]<class T>() {
    const T* g = grad_losses.data<T>();
    const T* lp = log_probs.data<T>();
    T* gx = grad_logits.data<T>();
    const int64_t* t = target.data<int64_t>();
    parallel_for(log_probs.size(0), grain_for(classes), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        for (int64_t j = 0; j < classes; ++j) gx[i * classes + j] = g[i] * std::exp(lp[i * classes + j]);
        gx[i * classes + t[i]] -= g[i];
      }
    });
  });
}

}  // namespace duet::kernels::cpu
