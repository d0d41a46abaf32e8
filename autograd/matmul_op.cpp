// matmul with NumPy semantics: 1-D operands are promoted to matrices and squeezed back, and
// batch dims broadcast. The kernel sees [m,k]@[k,n] or [B,m,k]@[B,k,n]; broadcast batch dims
// reach it as stride-0 views, not copies.
#include <string>

#include "duet/autograd/checks.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/function.h"
#include "duet/autograd/grad_mode.h"
#include "duet/autograd/op_helpers.h"
#include "duet/autograd/ops.h"
#include "duet/kernels/kernels.h"

namespace duet {
namespace {

using autograd::Node;
using autograd::SavedTensor;
using autograd::TensorList;

Shape batch_dims(const Tensor& t) { return Shape(t.sizes().begin(), t.sizes().end() - 2); }

// [B...,m,k] @ [B...,k,n] for operands of rank >= 2 (no graph). The batch dims broadcast.
Tensor batched_matmul(const Tensor& a, const Tensor& b) {
  NoGradGuard no_grad;  // the reshapes below are plumbing, not graph
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  DUET_CHECK(b.size(-2) == k, "matmul: shapes do not match: ", a.describe(), " @ ", b.describe(), " (inner dims ", k,
             " and ", b.size(-2), " differ)");
  // The error names both operands, not only their batch dims.
  const Shape a_batch = batch_dims(a), b_batch = batch_dims(b);
  const Shape batch =
      a_batch == b_batch
          ? a_batch
          : broadcast_shapes(a_batch, b_batch,
                             ("matmul of " + a.describe() + " @ " + b.describe() + ": batch dims").c_str());
  Shape out_shape = batch;
  out_shape.insert(out_shape.end(), {m, n});
  Tensor out = empty(out_shape, autograd::options_of(a));
  if (batch.empty()) {
    kernels::matmul(a, b, out);
    return out;
  }
  auto as_3d = [&](const Tensor& t, int64_t rows, int64_t cols) {
    Shape full = batch;
    full.insert(full.end(), {rows, cols});
    return t.expand(full).reshape({numel(batch), rows, cols});
  };
  kernels::matmul(as_3d(a, m, k), as_3d(b, k, n), out.view({numel(batch), m, n}));
  return out;
}

// A transposed matrix, as Linear's weight.t(): its gradient is best computed column-major too.
bool is_column_major(const Tensor& t) {
  return t.dim() == 2 && t.size(0) > 1 && t.size(1) > 1 && t.stride(0) == 1 && t.stride(1) == t.size(0);
}

// x @ y for an operand's gradient, column-major when the operand is: computed as (y^T x^T)^T.
// Undoing the operand's transpose then gives the leaf a dense gradient that AccumulateGrad
// keeps as it is, instead of copying it through a transpose at every step.
Tensor gradient_matmul(bool column_major, const Tensor& x, const Tensor& y) {
  if (!column_major || x.dim() != 2 || y.dim() != 2) return batched_matmul(x, y);
  NoGradGuard no_grad;
  return batched_matmul(y.t(), x.t()).t();
}

// A 1-D operand as a matrix: [k] -> [1,k] on the left, [k] -> [k,1] on the right.
Tensor as_matrix(const Tensor& t, bool left) {
  NoGradGuard no_grad;
  if (t.dim() != 1) return t;
  return left ? t.unsqueeze(0) : t.unsqueeze(1);
}

// The output shape after squeezing away the dims that 1-D operands added.
Shape result_shape(const Tensor& a, const Tensor& b, const Shape& full) {
  Shape shape(full.begin(), full.end() - 2);
  if (a.dim() != 1) shape.push_back(full[full.size() - 2]);
  if (b.dim() != 1) shape.push_back(full[full.size() - 1]);
  return shape;
}

class MatmulBackward final : public Node {
 public:
  MatmulBackward(const Tensor& a, const Tensor& b, Shape full_out_shape)
      : a_shape_(a.sizes()),
        b_shape_(b.sizes()),
        full_out_shape_(std::move(full_out_shape)),
        a_is_vector_(a.dim() == 1),
        b_is_vector_(b.dim() == 1),
        a_column_major_(is_column_major(a)),
        b_column_major_(is_column_major(b)) {
    // grad_a reads b and grad_b reads a: keep only what the needed gradients read.
    if (b.requires_grad()) a_ = SavedTensor(a);
    if (a.requires_grad()) b_ = SavedTensor(b);
  }

  TensorList apply(TensorList&& grads) override {
    if (!grads.at(0).defined()) return {Tensor(), Tensor()};
    Tensor g = grads[0].reshape(full_out_shape_);
    Tensor grad_a, grad_b;
    if (autograd::input_needs_grad(*this, 0)) {
      Tensor b = as_matrix(b_.unpack(*this), /*left=*/false);
      grad_a = unbroadcast(gradient_matmul(a_column_major_, g, b.transpose(-1, -2)), a_shape_, a_is_vector_, true);
    }
    if (autograd::input_needs_grad(*this, 1)) {
      Tensor a = as_matrix(a_.unpack(*this), /*left=*/true);
      grad_b = unbroadcast(gradient_matmul(b_column_major_, a.transpose(-1, -2), g), b_shape_, b_is_vector_, false);
    }
    return {grad_a, grad_b};
  }
  std::string name() const override { return "MatmulBackward"; }
  void release_saved() override {
    a_.reset();
    b_.reset();
  }

 private:
  // Sums a batch-shaped gradient down to the operand's (promoted) shape, then undoes the promotion.
  static Tensor unbroadcast(const Tensor& grad, const Shape& shape, bool is_vector, bool left) {
    if (!is_vector) return autograd::sum_to_shape(grad, shape);
    Shape promoted = left ? Shape{1, shape[0]} : Shape{shape[0], 1};
    return autograd::sum_to_shape(grad, promoted).reshape(shape);
  }

  Shape a_shape_, b_shape_, full_out_shape_;
  bool a_is_vector_, b_is_vector_;
  bool a_column_major_, b_column_major_;
  SavedTensor a_, b_;
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  autograd::check_compatible("matmul", a, b);
  autograd::check_floating("matmul", a);
  DUET_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: both operands need at least 1 dim, got ", a.describe(), " @ ",
             b.describe());
  const int64_t b_rows = b.dim() == 1 ? b.size(0) : b.size(-2);
  DUET_CHECK(a.size(-1) == b_rows, "matmul: shapes do not match: ", a.describe(), " @ ", b.describe(), " (inner dims ",
             a.size(-1), " and ", b_rows, " differ)");
  Tensor full = batched_matmul(as_matrix(a, true), as_matrix(b, false));
  Shape shape = result_shape(a, b, full.sizes());
  Tensor out = full.as_strided(shape, contiguous_strides(shape), 0);
  if (autograd::needs_grad({a, b})) {
    autograd::record(std::make_shared<MatmulBackward>(a, b, full.sizes()), {a, b}, {out});
  }
  return out;
}

}  // namespace duet
