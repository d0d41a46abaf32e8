// The fused optimizer updates on CUDA: one thread per element (grid-stride) running the
// functors of kernels/optim_functors.h, the same math as the CPU loop. Built with --fmad=false
// (CMakeLists.txt) so that nvcc does not contract a * b + c into an fma: with IEEE division and
// square root (nvcc's defaults) every step then rounds as on the CPU.
#include "duet/kernels/cuda/elementwise.cuh"
#include "duet/kernels/cuda/launchers.h"
#include "duet/kernels/optim_functors.h"

namespace duet::cuda {
namespace {

template <class T> struct SgdElement {
  kernels::functors::SgdMath<T> math;
  T* p;
  const T* g;
  T* buf;  // null without momentum
  __device__ void operator()(int64_t i) const {
    if (buf) math(p[i], g[i], buf[i]);
    else math(p[i], g[i]);
  }
};

template <class T> struct AdamElement {
  kernels::functors::AdamMath<T> math;
  T* p;
  const T* g;
  T* m;
  T* v;
  T* max_v;  // null without amsgrad
  __device__ void operator()(int64_t i) const {
    if (max_v) math(p[i], g[i], m[i], v[i], max_v[i]);
    else math(p[i], g[i], m[i], v[i]);
  }
};

}  // namespace

void launch_sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                       const kernels::SgdUpdateArgs& args, cudaStream_t stream) {
  dispatch_floating(param.dtype(), "sgd_update", [&]<class T>() {
    T* buf = momentum_buffer.defined() ? momentum_buffer.data<T>() : nullptr;
    launch_indexed(param.numel(),
                   SgdElement<T>{kernels::functors::SgdMath<T>(args), param.data<T>(), grad.data<T>(), buf}, stream);
  });
}

void launch_adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                        const Tensor& max_exp_avg_sq, const kernels::AdamUpdateArgs& args, cudaStream_t stream) {
  dispatch_floating(param.dtype(), "adam_update", [&]<class T>() {
    T* max_v = max_exp_avg_sq.defined() ? max_exp_avg_sq.data<T>() : nullptr;
    launch_indexed(param.numel(),
                   AdamElement<T>{kernels::functors::AdamMath<T>(args), param.data<T>(), grad.data<T>(),
                                  exp_avg.data<T>(), exp_avg_sq.data<T>(), max_v},
                   stream);
  });
}

}  // namespace duet::cuda
