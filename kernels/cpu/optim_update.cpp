// The fused optimizer updates on the CPU: one flat loop per parameter over the functors of
// kernels/optim_functors.h, split over the thread pool. The operands are contiguous and
// distinct (checked by optim_dispatch.cpp), hence the restrict pointers, which let the loops
// vectorise without runtime alias checks. This file is compiled with -ffp-contract=off (so the
// result stays bitwise the unfused ops' on FMA hardware) and -fno-math-errno (so sqrt is one
// vector instruction rather than a call that may set errno); see CMakeLists.txt.
#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/strided_loop.h"
#include "duet/kernels/optim_functors.h"

namespace duet::kernels::cpu {
namespace {

template <class T>
void sgd_range(const functors::SgdMath<T> math, T* __restrict p, const T* __restrict g, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) math(p[i], g[i]);
}

template <class T> void sgd_momentum_range(const functors::SgdMath<T> math, T* __restrict p, const T* __restrict g,
                                           T* __restrict buf, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) math(p[i], g[i], buf[i]);
}

template <class T> void adam_range(const functors::AdamMath<T> math, T* __restrict p, const T* __restrict g,
                                   T* __restrict m, T* __restrict v, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) math(p[i], g[i], m[i], v[i]);
}

template <class T> void amsgrad_range(const functors::AdamMath<T> math, T* __restrict p, const T* __restrict g,
                                      T* __restrict m, T* __restrict v, T* __restrict max_v, int64_t begin,
                                      int64_t end) {
  for (int64_t i = begin; i < end; ++i) math(p[i], g[i], m[i], v[i], max_v[i]);
}

}  // namespace

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const SgdUpdateArgs& args) {
  dispatch_floating(param.dtype(), "sgd_update", [&]<class T>() {
    const functors::SgdMath<T> math(args);
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    T* buf = momentum_buffer.defined() ? momentum_buffer.data<T>() : nullptr;
    parallel_for(param.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
      if (buf) sgd_momentum_range(math, p, g, buf, begin, end);
      else sgd_range(math, p, g, begin, end);
    });
  });
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const Tensor& max_exp_avg_sq, const AdamUpdateArgs& args) {
  dispatch_floating(param.dtype(), "adam_update", [&]<class T>() {
    const functors::AdamMath<T> math(args);
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    T* m = exp_avg.data<T>();
    T* v = exp_avg_sq.data<T>();
    T* max_v = max_exp_avg_sq.defined() ? max_exp_avg_sq.data<T>() : nullptr;
    parallel_for(param.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
      if (max_v) amsgrad_range(math, p, g, m, v, max_v, begin, end);
      else adam_range(math, p, g, m, v, begin, end);
    });
  });
}

}  // namespace duet::kernels::cpu
