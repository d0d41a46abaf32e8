// Binary ops and their partial derivatives on CUDA, on the same functors (and dtype rules) as
// the CPU loops: arithmetic on every dtype except pow (floating only), comparisons on every
// dtype writing u8, derivatives on floating dtypes.
//
// Every op but pow is one correctly rounded IEEE operation, or a few (floor_divide's fmod,
// subtraction, division and floor), with no product to contract, and gives the CPU's bits; pow
// is the device's own (CUDA documents up to 8 ulp for f32), and the derivatives' products may be
// contracted into fmas, so those agree closely, not bit for bit.
//
// Integer division (div, floor_divide) by zero cannot be reported from a kernel the way the CPU
// reports it; its result is unspecified, as in PyTorch on CUDA.
#include <type_traits>

#include "duet/kernels/cuda/elementwise.cuh"
#include "duet/kernels/cuda/launchers.h"
#include "duet/kernels/dtype_checks.h"
#include "duet/kernels/functors.h"

namespace duet::cuda {
namespace {

using kernels::BinaryOp;
namespace fn = kernels::functors;

// R is T for arithmetic and uint8_t for comparisons.
template <class F, class T, class R> struct BinaryForward {
  R* out;
  const T* a;
  const T* b;
  __device__ void operator()(const Offsets<3>& o) const { out[o.v[0]] = static_cast<R>(F{}(a[o.v[1]], b[o.v[2]])); }
};

// One partial derivative at out's shape. `out` may be null: the forward value is recomputed.
template <class F, class T, bool kWrtA> struct BinaryPartial {
  T* grad_x;
  const T* grad;
  const T* a;
  const T* b;
  const T* out;
  __device__ void operator()(const Offsets<5>& o) const {
    T g = grad[o.v[1]], x = a[o.v[2]], y = b[o.v[3]];
    T z = out ? out[o.v[4]] : F{}(x, y);
    if constexpr (kWrtA) grad_x[o.v[0]] = F{}.grad_a(g, x, y, z);
    else grad_x[o.v[0]] = F{}.grad_b(g, x, y, z);
  }
};

}  // namespace

void launch_binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out, cudaStream_t stream) {
  const char* name = kernels::name(op);
  kernels::check_same_dtype(name, a, b);
  if (kernels::is_comparison(op)) {
    fn::dispatch_comparison(op, [&]<class F>() {
      dispatch_dtype(a.dtype(), [&]<class T>() {
        launch_elementwise<3>(name, {&out, &a, &b},
                              BinaryForward<F, T, uint8_t>{out.data<uint8_t>(), a.data<T>(), b.data<T>()}, stream);
      });
    });
    return;
  }
  fn::dispatch_arithmetic(op, [&]<class F>() {
    auto run = [&]<class T>() {
      launch_elementwise<3>(name, {&out, &a, &b}, BinaryForward<F, T, T>{out.data<T>(), a.data<T>(), b.data<T>()},
                            stream);
    };
    if constexpr (std::is_same_v<F, fn::Pow>) dispatch_floating(a.dtype(), name, run);
    else dispatch_dtype(a.dtype(), run);
  });
}

void launch_binary_backward(BinaryOp op, bool wrt_a, const Tensor& grad, const Tensor& a, const Tensor& b,
                            const Tensor& out, const Tensor& grad_x, cudaStream_t stream) {
  const char* name = kernels::name(op);
  kernels::check_same_dtype(name, a, b);
  fn::dispatch_arithmetic(op, [&]<class F>() {
    dispatch_floating(a.dtype(), name, [&]<class T>() {
      const Tensor& out_layout = out.defined() ? out : grad;  // null pointer never read
      const T* out_data = out.defined() ? out.data<T>() : nullptr;
      std::array<const Tensor*, 5> operands{&grad_x, &grad, &a, &b, &out_layout};
      if (wrt_a)
        launch_elementwise<5>(
            name, operands,
            BinaryPartial<F, T, true>{grad_x.data<T>(), grad.data<T>(), a.data<T>(), b.data<T>(), out_data}, stream);
      else
        launch_elementwise<5>(
            name, operands,
            BinaryPartial<F, T, false>{grad_x.data<T>(), grad.data<T>(), a.data<T>(), b.data<T>(), out_data}, stream);
    });
  });
}

}  // namespace duet::cuda
