// Row-major GEMM on raw buffers for the CPU kernels that call BLAS per image (conv2d):
//   c = alpha * op(a) @ op(b) + beta * c,  op(a) [m, k], op(b) [k, n], c [m, n].
// OpenBLAS runs single-threaded: the callers split their work over the thread pool, so BLAS's
// own threads would only oversubscribe the cores.
#pragma once

#include <algorithm>
#include <cstdint>

namespace duet::kernels::cpu {

template <class T>  // float or double
void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// duet's own GEMM, for the Linear layers of small models (f32) and the direct convolution's
// input gradient (conv2d_direct.cpp): on one of this project's machines OpenBLAS 0.3.21 runs its
// Haswell kernel at about half of the FMA rate (bench/layer_roofline prints both). op(b) [k, n]
// is packed once into panels of 4 vectors' columns (64 floats), [k][64] each, or of as many
// vectors as a narrower op(b) needs (the last panel padded with zeros); c = op(a) @ op(b) is
// computed in row blocks against them. matmul.cpp takes it where pays() says, and splits the
// work over the threads by panels or by rows of c.
template <class T>  // float or double
class PackedPanels {
 public:
  // Where it beat OpenBLAS in bench/layer_roofline (f32): a panel (k x 64 floats) stays in L2,
  // all of op(b) within 4 MiB, and rows enough to amortise the packing. Columns fill more than
  // half of a vector: OpenBLAS has kernels for narrower c, where a panel of one vector would leave
  // half of its lanes or more idle (docs/performance.md).
  static bool pays(int64_t m, int64_t n, int64_t k);
  // The buffer is the calling thread's, reused from call to call (one PackedPanels at a time).
  PackedPanels(int64_t n, int64_t k);
  int64_t panels() const { return (n_ + width_ - 1) / width_; }
  // The columns of op(b) in panels [first, last).
  int64_t columns(int64_t first, int64_t last) const { return std::min(last * width_, n_) - first * width_; }
  // Packs panels [first, last) of op(b) (b [n, k] row-major when transpose_b, else [k, n]).
  void pack(bool transpose_b, const T* b, int64_t ldb, int64_t first, int64_t last);
  // c [m, n] = op(a) @ op(b), c's prior contents ignored (a [k, m] row-major when transpose_a);
  // only c's columns of panels [first, last) when given.
  void multiply(bool transpose_a, int64_t m, const T* a, int64_t lda, T* c, int64_t ldc, int64_t first = 0,
                int64_t last = -1) const;

 private:
  static constexpr int64_t kLanes = 64 / sizeof(T);  // one 64-byte vector (simd.h's Simd<T>::kLanes)
  int64_t n_, k_;
  int64_t width_;  // columns per panel: 4 vectors, or as many as n needs when fewer
  T* data_;
};

}  // namespace duet::kernels::cpu
