// Writers with no tensor inputs on CUDA: fill, arange and the Philox draws.
//
// uniform and arange must equal the CPU bit for bit, so their double arithmetic uses explicit
// round-to-nearest intrinsics: nvcc would otherwise contract a + b * c into one fma, which
// rounds once instead of twice and differs from the CPU loop in the last bit.
#include "duet/core/philox.h"
#include "duet/kernels/cast.h"
#include "duet/kernels/cuda/elementwise.cuh"
#include "duet/kernels/cuda/launchers.h"

namespace duet::cuda {
namespace {

template <class T> struct Fill {
  T* out;
  T value;
  __device__ void operator()(const Offsets<1>& o) const { out[o.v[0]] = value; }
};

template <class T> struct Arange {
  T* out;
  int64_t stride;
  double start, step;
  __device__ void operator()(int64_t i) const {
    out[i * stride] = kernels::cast_value<T>(__dadd_rn(start, __dmul_rn(static_cast<double>(i), step)));
  }
};

template <class T> struct Uniform {
  T* out;
  uint64_t seed, offset;
  double low, scale;
  __device__ void operator()(int64_t i) const {
    double u = philox::uniform(philox::bits(seed, offset, static_cast<uint64_t>(i)));
    out[i] = static_cast<T>(__dadd_rn(low, __dmul_rn(scale, u)));
  }
};

template <class T> struct Normal {
  T* out;
  uint64_t seed, offset;
  double mean, stddev;
  __device__ void operator()(int64_t i) const {
    double z = philox::normal(seed, offset, static_cast<uint64_t>(i));
    out[i] = static_cast<T>(__dadd_rn(__dmul_rn(z, stddev), mean));
  }
};

// The Philox draws are defined for a contiguous floating output (kernels.h).
template <class Write> void draw(const char* name, const Tensor& out, cudaStream_t stream, Write write) {
  DUET_CHECK(out.is_contiguous(), name, ": expected a contiguous output, got ", out.describe(), " with strides ",
             shape_str(out.strides()));
  dispatch_floating(out.dtype(), name, [&]<class T>() { launch_indexed(out.numel(), write(out.data<T>()), stream); });
}

}  // namespace

void launch_fill(const Tensor& out, double value, cudaStream_t stream) {
  dispatch_dtype(out.dtype(), [&]<class T>() {
    launch_elementwise<1>("fill", {&out}, Fill<T>{out.data<T>(), kernels::cast_value<T>(value)}, stream);
  });
}

void launch_arange(const Tensor& out, double start, double step, cudaStream_t stream) {
  DUET_CHECK(out.dim() == 1, "arange: expected a 1-D output, got ", out.describe());
  dispatch_dtype(out.dtype(), [&]<class T>() {
    launch_indexed(out.numel(), Arange<T>{out.data<T>(), out.stride(0), start, step}, stream);
  });
}

void launch_uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high, cudaStream_t stream) {
  const double scale = high - low;  // computed once, as on the CPU
  draw("uniform", out, stream, [&]<class T>(T* data) { return Uniform<T>{data, seed, offset, low, scale}; });
}

void launch_normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double stddev, cudaStream_t stream) {
  draw("normal", out, stream, [&]<class T>(T* data) { return Normal<T>{data, seed, offset, mean, stddev}; });
}

}  // namespace duet::cuda
