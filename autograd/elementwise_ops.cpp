// Elementwise unary and binary ops, their operators, and comparisons.
//
// One UnaryBackward and one BinaryBackward node serve every op: the derivative itself lives
// in the kernels' functors (kernels/functors.h), so these nodes only decide what to save,
// allocate the gradients, and un-broadcast them.
#include "duet/autograd/checks.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/function.h"
#include "duet/autograd/op_helpers.h"
#include "duet/autograd/ops.h"
#include "duet/kernels/kernels.h"

namespace duet {
namespace {

using autograd::Node;
using autograd::SavedTensor;
using autograd::TensorList;
using kernels::BinaryOp;
using kernels::UnaryOp;

// ---- unary ----

// What a unary op's derivative reads: neg reads nothing; exp, sqrt, sigmoid and tanh are
// cheapest from their output; log, abs and relu need their input.
enum class UnarySaves { nothing, input, output };

UnarySaves unary_saves(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg:
      return UnarySaves::nothing;
    case UnaryOp::exp:
    case UnaryOp::sqrt:
    case UnaryOp::sigmoid:
    case UnaryOp::tanh:
      return UnarySaves::output;
    case UnaryOp::log:
    case UnaryOp::abs:
    case UnaryOp::relu:
      return UnarySaves::input;
  }
  return UnarySaves::input;
}

class UnaryBackward final : public Node {
 public:
  UnaryBackward(UnaryOp op, const Tensor& input, const Tensor& output) : op_(op) {
    UnarySaves saves = unary_saves(op);
    if (saves == UnarySaves::input) input_ = SavedTensor(input);
    if (saves == UnarySaves::output) output_ = SavedTensor(output);
  }

  TensorList apply(TensorList&& grads) override {
    const Tensor& grad = grads.at(0);
    if (!grad.defined()) return {Tensor()};
    // Unpack only what was saved: neg saved nothing and may run again after release.
    Tensor input = input_.defined() ? input_.unpack(*this) : Tensor();
    Tensor output = output_.defined() ? output_.unpack(*this) : Tensor();
    Tensor grad_in = empty_like(grad);
    if (unary_saves(op_) == UnarySaves::nothing) {
      kernels::unary(op_, grad, grad_in);  // neg is linear: d(-x) = -g
    } else {
      kernels::unary_backward(op_, grad, input, output, grad_in);
    }
    return {grad_in};
  }
  std::string name() const override { return autograd::backward_name(kernels::name(op_)); }
  void release_saved() override {
    input_.reset();
    output_.reset();
  }

 private:
  UnaryOp op_;
  SavedTensor input_, output_;
};

Tensor unary_op(UnaryOp op, const Tensor& x) {
  const char* op_name = kernels::name(op);
  autograd::check_defined(op_name, x);
  if (op != UnaryOp::neg && op != UnaryOp::abs) autograd::check_floating(op_name, x);
  Tensor out = empty_like(x);
  kernels::unary(op, x, out);
  if (autograd::needs_grad({x})) {
    autograd::record(std::make_shared<UnaryBackward>(op, x, out), {x}, {out});
  }
  return out;
}

// ---- binary ----

// Which operands backward keeps. add and sub are linear and floor_divide's gradient is zero,
// so they keep none; mul's partial for a reads only b and vice versa; the other partials read
// both operands.
bool keeps_none(BinaryOp op) { return op == BinaryOp::add || op == BinaryOp::sub || op == BinaryOp::floor_divide; }
bool keeps_a(BinaryOp op, bool b_needs_grad) { return !keeps_none(op) && (op != BinaryOp::mul || b_needs_grad); }
bool keeps_b(BinaryOp op, bool a_needs_grad) { return !keeps_none(op) && (op != BinaryOp::mul || a_needs_grad); }

class BinaryBackward final : public Node {
 public:
  BinaryBackward(BinaryOp op, const Tensor& a, const Tensor& b) : op_(op), a_shape_(a.sizes()), b_shape_(b.sizes()) {
    const bool a_needs = a.requires_grad(), b_needs = b.requires_grad();
    if (keeps_a(op, b_needs)) a_ = SavedTensor(a);
    if (keeps_b(op, a_needs)) b_ = SavedTensor(b);
  }

  TensorList apply(TensorList&& grads) override {
    const Tensor& grad = grads.at(0);
    const bool want_a = autograd::input_needs_grad(*this, 0), want_b = autograd::input_needs_grad(*this, 1);
    if (!grad.defined()) return {Tensor(), Tensor()};
    if (op_ == BinaryOp::add) {  // the identity on both sides: no kernel needed
      return {want_a ? autograd::sum_to_shape(grad, a_shape_) : Tensor(),
              want_b ? autograd::sum_to_shape(grad, b_shape_) : Tensor()};
    }
    if (op_ == BinaryOp::floor_divide) {  // piecewise constant
      return {want_a ? zeros(a_shape_, autograd::options_of(grad)) : Tensor(),
              want_b ? zeros(b_shape_, autograd::options_of(grad)) : Tensor()};
    }
    // An operand that was not kept is read by no partial we evaluate; a zero scalar stands in.
    Tensor placeholder = scalar_like(0.0, grad);
    Tensor a = a_.defined() ? a_.unpack(*this) : placeholder;
    Tensor b = b_.defined() ? b_.unpack(*this) : placeholder;
    Tensor grad_a = want_a ? empty_like(grad) : Tensor();
    Tensor grad_b = want_b ? empty_like(grad) : Tensor();
    kernels::binary_backward(op_, grad, a, b, Tensor(), grad_a, grad_b);
    return {want_a ? autograd::sum_to_shape(grad_a, a_shape_) : Tensor(),
            want_b ? autograd::sum_to_shape(grad_b, b_shape_) : Tensor()};
  }
  std::string name() const override { return autograd::backward_name(kernels::name(op_)); }
  void release_saved() override {
    a_.reset();
    b_.reset();
  }

 private:
  BinaryOp op_;
  Shape a_shape_, b_shape_;
  SavedTensor a_, b_;
};

// An operand of true division: a floating tensor as it is, an integer one as f32 (torch.div).
Tensor as_true_division_operand(const Tensor& t) { return is_floating(t.dtype()) ? t : t.to(DType::f32); }

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* op_name = kernels::name(op);
  autograd::check_compatible(op_name, a, b);
  if (op == BinaryOp::pow) autograd::check_floating(op_name, a);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes(), op_name);
  DType dtype = kernels::is_comparison(op) ? DType::u8 : a.dtype();
  Tensor out = empty(std::move(shape), autograd::options_of(a, dtype));
  kernels::binary(op, a, b, out);
  if (!kernels::is_comparison(op) && autograd::needs_grad({a, b})) {
    autograd::record(std::make_shared<BinaryBackward>(op, a, b), {a, b}, {out});
  }
  return out;
}

}  // namespace

Tensor neg(const Tensor& x) { return unary_op(UnaryOp::neg, x); }
Tensor exp(const Tensor& x) { return unary_op(UnaryOp::exp, x); }
Tensor log(const Tensor& x) { return unary_op(UnaryOp::log, x); }
Tensor sqrt(const Tensor& x) { return unary_op(UnaryOp::sqrt, x); }
Tensor abs(const Tensor& x) { return unary_op(UnaryOp::abs, x); }
Tensor relu(const Tensor& x) { return unary_op(UnaryOp::relu, x); }
Tensor sigmoid(const Tensor& x) { return unary_op(UnaryOp::sigmoid, x); }
Tensor tanh(const Tensor& x) { return unary_op(UnaryOp::tanh, x); }

Tensor add(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) {
  // True division, as torch.div: integers are divided as f32 (so -7 / 2 = -3.5, and a zero
  // divisor gives inf or NaN, not an error).
  autograd::check_compatible("div", a, b);
  return binary_op(BinaryOp::div, as_true_division_operand(a), as_true_division_operand(b));
}
Tensor floor_divide(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::floor_divide, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::pow, a, b); }
Tensor pow(const Tensor& a, double exponent) {
  autograd::check_defined("pow", a);
  return pow(a, scalar_like(exponent, a));
}
Tensor maximum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::minimum, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::ge, a, b); }

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  autograd::check_defined("clamp", x);
  DUET_CHECK(min || max, "clamp: at least one of min and max must be given");
  // By selection rather than maximum/minimum, whose gradient splits ties: x keeps its whole
  // gradient at a bound, as in torch.clamp.
  Tensor out = x;
  if (min) {
    const Tensor low = scalar_like(*min, x);
    out = where(lt(out, low), low, out);
  }
  if (max) {
    const Tensor high = scalar_like(*max, x);
    out = where(gt(out, high), high, out);
  }
  return out;
}

Tensor scalar_like(double value, const Tensor& like) {
  autograd::check_defined("scalar_like", like);
  Tensor out = empty({}, autograd::options_of(like));
  kernels::fill(out, value);
  return out;
}

Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, double b) { return add(a, scalar_like(b, a)); }
Tensor operator-(const Tensor& a, double b) { return sub(a, scalar_like(b, a)); }
Tensor operator*(const Tensor& a, double b) { return mul(a, scalar_like(b, a)); }
// The scalar takes the dividend's dtype after promotion, so that i64 / 2.5 divides by 2.5.
Tensor operator/(const Tensor& a, double b) {
  autograd::check_defined("div", a);
  Tensor dividend = as_true_division_operand(a);
  return div(dividend, scalar_like(b, dividend));
}
Tensor operator+(double a, const Tensor& b) { return add(scalar_like(a, b), b); }
Tensor operator-(double a, const Tensor& b) { return sub(scalar_like(a, b), b); }
Tensor operator*(double a, const Tensor& b) { return mul(scalar_like(a, b), b); }
Tensor operator/(double a, const Tensor& b) {
  autograd::check_defined("div", b);
  Tensor divisor = as_true_division_operand(b);
  return div(scalar_like(a, divisor), divisor);
}

}  // namespace duet
