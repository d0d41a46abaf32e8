// matmul on CUDA: one cuBLAS strided-batched GEMM (blas.h) per call.
//
// cuBLAS is column-major. An operand goes to it as it is when one of its last two strides is 1
// (row- or column-major with a leading dimension); other layouts are first copied to a dense
// tensor. A column-major output is written directly (C = A B); a row-major one is computed as
// its transpose, C^T = B^T A^T, which cuBLAS sees as a column-major matrix in the same memory.
#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "duet/kernels/cuda/blas.h"
#include "duet/kernels/cuda/launchers.h"

namespace duet::cuda {
namespace {

// One matrix of a batch as BLAS sees it: logical rows x cols with element strides, and the
// element stride from one batch item to the next.
struct Matrix {
  char* data;
  int64_t rows, cols, row_stride, col_stride, batch_stride;

  Matrix transposed() const { return {data, cols, rows, col_stride, row_stride, batch_stride}; }
  // Where the matrix is column-major with a leading dimension: {false, ld} when it is stored
  // column by column, {true, ld} when row by row (so cuBLAS reads it as its transpose). Nothing
  // for layouts cuBLAS cannot read. The strides of a size-1 dim are meaningless: pick ones it
  // accepts.
  std::optional<std::pair<bool, int64_t>> column_major_layout() const {
    int64_t rs = rows == 1 ? 1 : row_stride;
    int64_t cs = cols == 1 ? std::max<int64_t>(rows, 1) : col_stride;
    if (rs == 1 && cs >= std::max<int64_t>(rows, 1)) return std::pair{false, cs};
    rs = rows == 1 ? std::max<int64_t>(cols, 1) : row_stride;
    cs = cols == 1 ? 1 : col_stride;
    if (cs == 1 && rs >= std::max<int64_t>(cols, 1)) return std::pair{true, rs};
    return std::nullopt;
  }
};

Matrix matrix_of(const Tensor& t) {
  const int64_t d = t.dim();
  return {static_cast<char*>(t.data_ptr()), t.size(d - 2), t.size(d - 1), t.stride(d - 2), t.stride(d - 1),
          d == 3 ? t.stride(0) : 0};
}

bool cublas_readable(const Tensor& t) { return matrix_of(t).column_major_layout().has_value(); }

// The same checks, in the same words, as the CPU's matmul.
void check_operands(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t rank = out.dim();
  DUET_CHECK((rank == 2 || rank == 3) && a.dim() == rank && b.dim() == rank,
             "matmul: expected rank-2 or rank-3 operands, got ", a.describe(), " @ ", b.describe(), " -> ",
             out.describe());
  const bool batch_ok = rank == 2 || (a.size(0) == out.size(0) && b.size(0) == out.size(0));
  DUET_CHECK(batch_ok && a.size(rank - 1) == b.size(rank - 2) && out.size(rank - 2) == a.size(rank - 2) &&
                 out.size(rank - 1) == b.size(rank - 1),
             "matmul: shapes do not match: ", a.describe(), " @ ", b.describe(), " -> ", out.describe());
  DUET_CHECK(a.dtype() == b.dtype() && a.dtype() == out.dtype(), "matmul: dtypes differ: ", a.describe(), " @ ",
             b.describe(), " -> ", out.describe());
}

template <class T> void gemm_typed(Matrix a, Matrix b, Matrix c, int64_t batch, Device device) {
  if (c.column_major_layout()->first) {  // row-major c: compute c^T = b^T a^T instead
    std::swap(a, b);
    a = a.transposed();
    b = b.transposed();
    c = c.transposed();
  }
  const auto [trans_a, lda] = *a.column_major_layout();
  const auto [trans_b, ldb] = *b.column_major_layout();
  const int64_t ldc = c.column_major_layout()->second;
  gemm_strided_batched<T>(device, trans_a, trans_b, c.rows, c.cols, a.cols, T(1), reinterpret_cast<const T*>(a.data),
                          lda, a.batch_stride, reinterpret_cast<const T*>(b.data), ldb, b.batch_stride, T(0),
                          reinterpret_cast<T*>(c.data), ldc, c.batch_stride, batch);
}

Tensor dense_copy(const Tensor& t, cudaStream_t stream) {
  Tensor dense = empty_contiguous(t.sizes(), t.dtype(), t.device());
  launch_copy(t, dense, stream);
  return dense;
}

}  // namespace

void launch_matmul(const Tensor& a, const Tensor& b, const Tensor& out, Device device, cudaStream_t stream) {
  check_operands(a, b, out);
  DUET_CHECK(is_floating(out.dtype()), "matmul: expected a floating dtype (f32 or f64), got ", out.describe());
  const int64_t rank = out.dim();
  const int64_t batch = rank == 3 ? out.size(0) : 1;
  const int64_t m = out.size(rank - 2), n = out.size(rank - 1), k = a.size(rank - 1);
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum; cuBLAS is not asked to handle lda = 0
    launch_fill(out, 0.0, stream);
    return;
  }
  // Copy only what cuBLAS cannot read as it is. The temporaries die on return; the caching
  // allocator reuses their memory only on this stream, after the GEMM.
  const Tensor a_ok = cublas_readable(a) ? a : dense_copy(a, stream);
  const Tensor b_ok = cublas_readable(b) ? b : dense_copy(b, stream);
  const Tensor out_ok = cublas_readable(out) ? out : empty_contiguous(out.sizes(), out.dtype(), out.device());
  dispatch_floating(out.dtype(), "matmul", [&]<class T>() {
    gemm_typed<T>(matrix_of(a_ok), matrix_of(b_ok), matrix_of(out_ok), batch, device);
  });
  if (!out_ok.is_same(out)) launch_copy(out_ok, out, stream);
}

}  // namespace duet::cuda
