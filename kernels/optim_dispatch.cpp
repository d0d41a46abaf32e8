// The fused optimizer updates: their operand contract (optim_kernels.h), checked here once for
// every backend, and the one dispatch on the parameter's device type.
#include <initializer_list>

#include "duet/core/error.h"
#include "duet/kernels/backend.h"
#include "duet/kernels/operand.h"
#include "duet/kernels/profiler.h"

namespace duet::kernels {
namespace {

// Every defined operand must match the first (the parameter) in device, dtype and shape, be
// contiguous and have its own storage: the kernels index all of them by one flat offset and
// write several of them, so an alias would read values the same pass has already updated.
void check_operands(const char* op, std::initializer_list<Operand> operands) {
  const Operand& param = *operands.begin();
  const Tensor& p = param.tensor;
  DUET_CHECK(is_floating(p.dtype()), op, ": expected a floating dtype (f32 or f64), got ", param.role, " ",
             p.describe());
  for (const Operand& o : operands) {
    const Tensor& t = o.tensor;
    DUET_CHECK(t.is_contiguous(), op, ": ", o.role, " ", t.describe(), " is not contiguous");
    if (&o == &param) continue;
    DUET_CHECK(t.device() == p.device(), op, ": ", o.role, " ", t.describe(), " and ", param.role, " ", p.describe(),
               " are on different devices");
    DUET_CHECK(t.dtype() == p.dtype() && t.sizes() == p.sizes(), op, ": ", o.role, " ", t.describe(),
               " does not match ", param.role, " ", p.describe(), " (same dtype and shape expected)");
    for (const Operand& earlier : operands) {
      if (&earlier == &o) break;
      DUET_CHECK(t.storage() != earlier.tensor.storage(), op, ": ", o.role, " and ", earlier.role, " share storage (",
                 t.describe(), ")");
    }
  }
}

}  // namespace

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const SgdUpdateArgs& args) {
  DUET_CHECK(param.defined() && grad.defined(), "sgd_update: param and grad must be defined");
  if (args.momentum != 0) {
    DUET_CHECK(momentum_buffer.defined(), "sgd_update: momentum ", args.momentum, " needs a momentum buffer");
    check_operands("sgd_update", {{"param", param}, {"grad", grad}, {"momentum_buffer", momentum_buffer}});
  } else {
    check_operands("sgd_update", {{"param", param}, {"grad", grad}});
  }
  if (param.numel() == 0) return;
  profiler::Scope profile(__func__);
  backend_for(param.device(), __func__).sgd_update(param, grad, args.momentum != 0 ? momentum_buffer : Tensor(), args);
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const Tensor& max_exp_avg_sq, const AdamUpdateArgs& args) {
  DUET_CHECK(param.defined() && grad.defined() && exp_avg.defined() && exp_avg_sq.defined(),
             "adam_update: param, grad, exp_avg and exp_avg_sq must all be defined");
  if (args.amsgrad) {
    DUET_CHECK(max_exp_avg_sq.defined(), "adam_update: amsgrad needs max_exp_avg_sq");
    check_operands("adam_update", {{"param", param},
                                   {"grad", grad},
                                   {"exp_avg", exp_avg},
                                   {"exp_avg_sq", exp_avg_sq},
                                   {"max_exp_avg_sq", max_exp_avg_sq}});
  } else {
    check_operands("adam_update", {{"param", param}, {"grad", grad}, {"exp_avg", exp_avg}, {"exp_avg_sq", exp_avg_sq}});
  }
  if (param.numel() == 0) return;
  profiler::Scope profile(__func__);
  backend_for(param.device(), __func__)
      .adam_update(param, grad, exp_avg, exp_avg_sq, args.amsgrad ? max_exp_avg_sq : Tensor(), args);
}

}  // namespace duet::kernels
