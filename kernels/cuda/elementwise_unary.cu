// Unary ops and their backward on CUDA, on the same functors (and dtype rules) as the CPU loops.
// The same formulas, not always the same bits: exp, log and tanh are the device's own (CUDA
// documents 1 to 2 ulp of error, glibc's differ), and nvcc contracts a * b + c into one fma, in
// sigmoid's exp_f32 and in the derivatives' products. neg, abs, relu and sqrt (IEEE on both) give
// the CPU's bits. tests/cuda/cuda_test_util.h says what each comparison allows.
#include <type_traits>

#include "duet/kernels/cuda/elementwise.cuh"
#include "duet/kernels/cuda/launchers.h"
#include "duet/kernels/functors.h"

namespace duet::cuda {
namespace {

using kernels::UnaryOp;
namespace fn = kernels::functors;

template <class F, class T> struct UnaryForward {
  T* out;
  const T* in;
  __device__ void operator()(const Offsets<2>& o) const {
    if constexpr (std::is_same_v<F, fn::Abs> && std::is_unsigned_v<T>)
      out[o.v[0]] = in[o.v[1]];  // |x| = x, without a pointless compare with 0
    else out[o.v[0]] = static_cast<T>(F{}(in[o.v[1]]));
  }
};

// `in` or `out` may be null: y is then recomputed from x, or x is passed as 0 to a backward
// that reads only y (functors::backward_needs_only_output). The branch is uniform per launch.
template <class F, class T> struct UnaryBackward {
  T* grad_in;
  const T* grad;
  const T* in;
  const T* out;
  __device__ void operator()(const Offsets<4>& o) const {
    T x = in ? in[o.v[2]] : T(0);
    T y = out ? out[o.v[3]] : F{}(x);
    grad_in[o.v[0]] = F{}.backward(grad[o.v[1]], x, y);
  }
};

template <class T> const T* data_or_null(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }

}  // namespace

void launch_unary(UnaryOp op, const Tensor& in, const Tensor& out, cudaStream_t stream) {
  const char* name = kernels::name(op);
  fn::dispatch_unary(op, [&]<class F>() {
    auto run = [&]<class T>() {
      launch_elementwise<2>(name, {&out, &in}, UnaryForward<F, T>{out.data<T>(), in.data<T>()}, stream);
    };
    // neg and abs are defined for every dtype, the rest for floating ones (kernels.h).
    if constexpr (std::is_same_v<F, fn::Neg> || std::is_same_v<F, fn::Abs>) dispatch_dtype(in.dtype(), run);
    else dispatch_floating(in.dtype(), name, run);
  });
}

void launch_unary_backward(UnaryOp op, const Tensor& grad, const Tensor& in, const Tensor& out, const Tensor& grad_in,
                           cudaStream_t stream) {
  const char* name = kernels::name(op);
  fn::dispatch_unary(op, [&]<class F>() {
    DUET_CHECK(in.defined() || (out.defined() && fn::backward_needs_only_output<F>), name,
               " backward: needs the forward input");
    dispatch_floating(grad_in.dtype(), name, [&]<class T>() {
      // A missing operand borrows grad's layout; its null pointer is never read.
      const Tensor& in_layout = in.defined() ? in : grad;
      const Tensor& out_layout = out.defined() ? out : grad;
      launch_elementwise<4>(
          name, {&grad_in, &grad, &in_layout, &out_layout},
          UnaryBackward<F, T>{grad_in.data<T>(), grad.data<T>(), data_or_null<T>(in), data_or_null<T>(out)}, stream);
    });
  });
}

}  // namespace duet::cuda
