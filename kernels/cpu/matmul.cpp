// matmul: single-threaded OpenBLAS GEMMs (gemm.h), split over batch items and row or column
// blocks by our pool; or, for the shapes of small models' Linear layers in f32, duet's own GEMM
// (PackedPanels).
//
// A transposed or otherwise strided operand goes to BLAS as it is when one of its last two
// strides is 1 (row- or column-major with a leading dimension); only other layouts are copied.
// A column-major output is handled by computing out^T = b^T a^T.
#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>

#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/gemm.h"
#include "duet/kernels/cpu/thread_pool.h"

namespace duet::kernels::cpu {
namespace {

// Half a MFLOP per part, a few microseconds of one core's multiply-adds: smaller parts cost more
// in the hand-off to another thread than they save. mlp's 256 -> 10 gradients (1.3 MFLOP a GEMM)
// split in two at this grain, where 1 MFLOP left them on one thread (docs/performance.md).
constexpr int64_t kGemmGrainFlops = int64_t{1} << 19;
// A part is at least this many rows (or columns) of c, so that each keeps BLAS's micro-kernel busy.
constexpr int64_t kMinPartSize = 16;

// One matrix of a batch as BLAS sees it: logical rows x cols with element strides.
struct Matrix {
  char* data;
  int64_t rows, cols, row_stride, col_stride;

  Matrix transposed() const { return {data, cols, rows, col_stride, row_stride}; }
  // {transposed, leading dimension} as BLAS reads it, or nothing for layouts it cannot read.
  // The element strides of a size-1 dim are meaningless: pick the ones BLAS accepts.
  std::optional<std::pair<bool, int64_t>> blas_layout() const {
    int64_t rs = rows == 1 ? std::max<int64_t>(cols, 1) : row_stride;
    int64_t cs = cols == 1 ? 1 : col_stride;
    if (cs == 1 && rs >= std::max<int64_t>(cols, 1)) return std::pair{false, rs};
    rs = rows == 1 ? 1 : row_stride;
    cs = cols == 1 ? std::max<int64_t>(rows, 1) : col_stride;
    if (rs == 1 && cs >= std::max<int64_t>(rows, 1)) return std::pair{true, cs};
    return std::nullopt;
  }
};

// A contiguous tensor shaped like `t` on its device, for layouts BLAS cannot use.
Tensor contiguous_like(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(t.numel()) * t.element_size(), t.device());
  impl->sizes = t.sizes();
  impl->strides = contiguous_strides(t.sizes());
  impl->dtype = t.dtype();
  return Tensor(std::move(impl));
}

Tensor contiguous_copy(const Tensor& t) {
  Tensor result = contiguous_like(t);
  copy(t, result);
  return result;
}

bool blas_usable(const Tensor& t) {
  const size_t d = t.sizes().size();
  Matrix m{nullptr, t.sizes()[d - 2], t.sizes()[d - 1], t.strides()[d - 2], t.strides()[d - 1]};
  return m.blas_layout().has_value();
}

// Batch item `index` of a rank-2 or rank-3 tensor, as a Matrix.
Matrix matrix_of(const Tensor& t, int64_t index) {
  const size_t d = t.sizes().size();
  const auto elem = static_cast<int64_t>(t.element_size());
  int64_t batch_offset = d == 3 ? index * t.strides()[0] : 0;
  return {static_cast<char*>(t.data_ptr()) + batch_offset * elem, t.sizes()[d - 2], t.sizes()[d - 1],
          t.strides()[d - 2], t.strides()[d - 1]};
}

// c = a @ b for one batch item: rows [r0, r1) of c, or its columns when by_columns. c must have
// a BLAS layout; a column-major c is computed as c^T = b^T a^T, whose rows are c's columns.
template <class T> void gemm_part(Matrix a, Matrix b, Matrix c, bool by_columns, int64_t r0, int64_t r1) {
  if (!c.blas_layout() || c.blas_layout()->first) {  // column-major c
    std::swap(a, b);
    a = a.transposed();
    b = b.transposed();
    c = c.transposed();
  }
  constexpr auto elem = static_cast<int64_t>(sizeof(T));
  if (by_columns) {
    b = {b.data + r0 * b.col_stride * elem, b.rows, r1 - r0, b.row_stride, b.col_stride};
    c = {c.data + r0 * c.col_stride * elem, c.rows, r1 - r0, c.row_stride, c.col_stride};
  } else {
    a = {a.data + r0 * a.row_stride * elem, r1 - r0, a.cols, a.row_stride, a.col_stride};
    c = {c.data + r0 * c.row_stride * elem, r1 - r0, c.cols, c.row_stride, c.col_stride};
  }
  auto [ta, lda] = *a.blas_layout();
  auto [tb, ldb] = *b.blas_layout();
  gemm<T>(ta, tb, c.rows, c.cols, a.cols, T(1), reinterpret_cast<const T*>(a.data), lda,
          reinterpret_cast<const T*>(b.data), ldb, T(0), reinterpret_cast<T*>(c.data), c.blas_layout()->second);
}

// c = a @ b for one matrix through PackedPanels (gemm.h), on `parts` threads. c is row-major.
// c [rows, n] is split along its longer side, so that what each thread reads whole is the
// smaller operand. By columns (whole panels, where they share n evenly: no thread's share a
// quarter over an even one), each thread packs its own panels of op(b) and multiplies all of
// op(a)'s rows against them; by rows, the threads pack the panels together and each multiplies
// its rows against all of them, half packed by the other thread. Reading what another core
// packed is what costs when this project's VM puts its two vCPUs where they share no cache, and
// by columns no thread does. Ties (n = rows, mlp's forward) go to columns too: where the vCPUs
// share a cache they lose a little there, since the input arrives from the loader's core and
// each thread reads all of it, but where they share none they win by more (docs/performance.md).
void packed_matmul(Matrix a, Matrix b, Matrix c, int64_t rows, int64_t parts) {
  // Plain variables, not structured bindings: the lambdas below capture them (which clang 14
  // refuses for bindings).
  const std::pair<bool, int64_t> a_layout = *a.blas_layout(), b_layout = *b.blas_layout();
  const bool ta = a_layout.first, tb = b_layout.first;
  const int64_t lda = a_layout.second, ldb = b_layout.second, ldc = c.blas_layout()->second;
  const float* a_data = reinterpret_cast<const float*>(a.data);
  const float* b_data = reinterpret_cast<const float*>(b.data);
  float* c_data = reinterpret_cast<float*>(c.data);
  PackedPanels<float> panels(c.cols, a.cols);
  const int64_t count = panels.panels();
  const auto first_panel = [&](int64_t part) { return count * part / parts; };
  int64_t widest = 0;
  for (int64_t part = 0; part < parts; ++part)
    widest = std::max(widest, panels.columns(first_panel(part), first_panel(part + 1)));
  if (c.cols >= rows && 4 * widest * parts <= 5 * c.cols) {
    parallel_for(parts, 1, [&](int64_t begin, int64_t end) {
      for (int64_t part = begin; part < end; ++part) {
        const int64_t first = first_panel(part), last = first_panel(part + 1);
        panels.pack(tb, b_data, ldb, first, last);
        panels.multiply(ta, rows, a_data, lda, c_data, ldc, first, last);
      }
    });
    return;
  }
  parallel_for(count, 1, [&](int64_t first, int64_t last) { panels.pack(tb, b_data, ldb, first, last); });
  parallel_for(parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part) {
      const int64_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts;
      panels.multiply(ta, r1 - r0, a_data + r0 * a.row_stride, lda, c_data + r0 * c.row_stride, ldc);
    }
  });
}

void check_operands(const Tensor& a, const Tensor& b, const Tensor& out) {
  const size_t rank = out.sizes().size();
  DUET_CHECK((rank == 2 || rank == 3) && a.sizes().size() == rank && b.sizes().size() == rank,
             "matmul: expected rank-2 or rank-3 operands, got ", a.describe(), " @ ", b.describe(), " -> ",
             out.describe());
  const Shape &as = a.sizes(), &bs = b.sizes(), &os = out.sizes();
  bool batch_ok = rank == 2 || (as[0] == os[0] && bs[0] == os[0]);
  DUET_CHECK(batch_ok && as[rank - 1] == bs[rank - 2] && os[rank - 2] == as[rank - 2] && os[rank - 1] == bs[rank - 1],
             "matmul: shapes do not match: ", a.describe(), " @ ", b.describe(), " -> ", out.describe());
  DUET_CHECK(a.dtype() == b.dtype() && a.dtype() == out.dtype(), "matmul: dtypes differ: ", a.describe(), " @ ",
             b.describe(), " -> ", out.describe());
  for (int64_t v : {as[rank - 2], as[rank - 1], bs[rank - 1]})
    DUET_CHECK(v <= std::numeric_limits<int>::max(), "matmul: dim ", v, " too large for BLAS in ", a.describe(), " @ ",
               b.describe());
}

template <class T> void matmul_typed(const Tensor& a, const Tensor& b, const Tensor& out) {
  const size_t rank = out.sizes().size();
  const int64_t batch = rank == 3 ? out.sizes()[0] : 1;
  const int64_t m = out.sizes()[rank - 2], n = out.sizes()[rank - 1], k = a.sizes()[rank - 1];
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: BLAS is not asked to handle lda = 0
    fill(out, 0.0);
    return;
  }
  // c is split along its longer side, so that what each part reads whole is the smaller operand
  // (mlp's [10, 256] weight gradient by columns). Its rows and columns here are BLAS's: those of
  // c^T when c is column-major (gemm_part).
  Matrix c0 = matrix_of(out, 0);
  const bool column_major = !c0.blas_layout() || c0.blas_layout()->first;
  const int64_t c_rows = column_major ? n : m, c_cols = column_major ? m : n;
  const bool by_columns = c_cols > c_rows;
  const int64_t split = std::max(c_rows, c_cols);
  const int64_t flops = 2 * m * n * k;
  const int64_t threads = pool_size();
  int64_t parts = 1;
  if (batch < threads) {
    int64_t want = (threads + batch - 1) / batch;
    int64_t by_work = std::max<int64_t>(1, flops / kGemmGrainFlops);
    int64_t by_size = std::max<int64_t>(1, split / kMinPartSize);
    parts = std::min({want, by_work, by_size});
  }
  if constexpr (std::is_same_v<T, float>) {
    if (batch == 1 && !column_major && PackedPanels<float>::pays(m, n, k)) {
      return packed_matmul(matrix_of(a, 0), matrix_of(b, 0), c0, m, parts);
    }
  }
  const int64_t tasks = batch * parts;
  const int64_t grain = parts > 1 ? 1 : std::max<int64_t>(1, kGemmGrainFlops / std::max<int64_t>(flops, 1));
  parallel_for(tasks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      int64_t item = task / parts, part = task % parts;
      gemm_part<T>(matrix_of(a, item), matrix_of(b, item), matrix_of(out, item), by_columns, split * part / parts,
                   split * (part + 1) / parts);
    }
  });
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  check_operands(a, b, out);
  // Copy only what BLAS cannot read as it is.
  Tensor a_usable = blas_usable(a) ? a : contiguous_copy(a);
  Tensor b_usable = blas_usable(b) ? b : contiguous_copy(b);
  Tensor out_usable = blas_usable(out) ? out : contiguous_like(out);
  dispatch_floating(out.dtype(), "matmul", [&]<class T>() { matmul_typed<T>(a_usable, b_usable, out_usable); });
  if (!out_usable.is_same(out)) copy(out_usable, out);
}

}  // namespace duet::kernels::cpu
