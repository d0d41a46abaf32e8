// gradcheck: backward's gradient against central finite differences, in f64.
#include "duet/autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/autograd/ops.h"

namespace duet {
namespace {

constexpr uint64_t kWeightSeed = 20240601;  // fixed, so a failure reproduces

void check_input(const Tensor& t, size_t i) {
  DUET_CHECK(t.defined(), "gradcheck: input ", i, " is undefined");
  DUET_CHECK(t.dtype() == DType::f64 && t.device().is_cpu() && t.is_leaf() && t.requires_grad(), "gradcheck: input ", i,
             " must be an f64 CPU leaf that requires grad, got ", t.describe(), t.is_leaf() ? "" : " (not a leaf)",
             t.requires_grad() ? "" : " (does not require grad)");
  for (int64_t d = 0; d < t.dim(); ++d) {
    DUET_CHECK(t.stride(d) != 0 || t.size(d) <= 1, "gradcheck: input ", i, " (", t.describe(),
               ") is expanded: its elements share memory, so they cannot be perturbed one by one");
  }
}

// The storage offset of row-major element `flat` of `t`, relative to data_ptr().
int64_t element_offset(const Tensor& t, int64_t flat) {
  int64_t offset = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    offset += (flat % t.size(d)) * t.stride(d);
    flat /= t.size(d);
  }
  return offset;
}

// The scalar that both sides differentiate: sum(fn(inputs) * w).
double objective(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs,
                 const Tensor& w) {
  return sum(fn(inputs) * w).item<double>();
}

std::string mismatch(size_t input, const Tensor& t, int64_t element, const std::string& analytic, double numeric,
                     const GradcheckOptions& options) {
  std::ostringstream out;
  out.precision(10);
  out << "gradcheck: input " << input << " (" << t.describe() << "), element " << element << ": analytic " << analytic
      << " vs numeric " << numeric << " (atol " << options.atol << ", rtol " << options.rtol << ")";
  return out.str();
}

}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, GradcheckOptions options) {
  for (size_t i = 0; i < inputs.size(); ++i) check_input(inputs[i], i);

  // Analytic: backward of sum(out * w), from clean gradients (the caller's are restored).
  std::vector<Tensor> previous_grads;
  for (const Tensor& t : inputs) {
    previous_grads.push_back(t.grad());
    t.set_grad(Tensor());
  }
  Tensor out = fn(inputs);
  DUET_CHECK(out.defined() && is_floating(out.dtype()), "gradcheck: fn must return a floating tensor, got ",
             out.describe());
  Generator generator(kWeightSeed);
  Tensor w = randn(out.sizes(), {.dtype = DType::f64}, &generator).to(out.device()).to(out.dtype());
  if (out.requires_grad()) sum(out * w).backward();  // else no input is reached: all gradients 0
  std::vector<Tensor> analytic;
  for (size_t i = 0; i < inputs.size(); ++i) {
    analytic.push_back(inputs[i].grad());
    inputs[i].set_grad(previous_grads[i]);
  }

  // Numeric: central differences, one element at a time, written straight into the storage
  // (no version bump: nothing saved is being invalidated, there is no graph in no-grad mode).
  NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    // An input backward never reached has an undefined gradient: it must then be 0 everywhere.
    std::vector<double> grad_values = analytic[i].defined() ? analytic[i].to_vector<double>()
                                                            : std::vector<double>(static_cast<size_t>(x.numel()), 0.0);
    double* base = x.data<double>();
    for (int64_t e = 0; e < x.numel(); ++e) {
      double& slot = base[element_offset(x, e)];
      const double original = slot;
      slot = original + options.eps;
      double plus = objective(fn, inputs, w);
      slot = original - options.eps;
      double minus = objective(fn, inputs, w);
      slot = original;
      const double numeric = (plus - minus) / (2 * options.eps);
      const double a = grad_values[static_cast<size_t>(e)];
      if (!(std::fabs(a - numeric) <= options.atol + options.rtol * std::fabs(numeric))) {
        std::ostringstream value;
        value.precision(10);
        if (analytic[i].defined()) value << a;
        else value << "0 (undefined: backward did not reach this input)";
        return {false, mismatch(i, x, e, value.str(), numeric, options)};
      }
    }
  }
  return {};
}

}  // namespace duet
