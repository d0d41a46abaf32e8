#include "duet/parallel/loss_fn.h"

#include "duet/autograd/ops.h"
#include "duet/core/error.h"

namespace duet::parallel {

Tensor training_loss(const LossFn& loss_fn, nn::functional::Reduction reduction, const Tensor& output,
                     const Tensor& target) {
  if (!loss_fn) return nn::functional::cross_entropy(output, target, reduction);
  Tensor loss = loss_fn(output, target);
  DUET_CHECK(loss.defined() && loss.numel() == 1, "loss_fn must return the mean loss as one number, got ",
             loss.defined() ? loss.describe() : std::string("an undefined tensor"));
  return reduction == nn::functional::Reduction::sum ? loss * static_cast<double>(target.size(0)) : loss;
}

bool are_class_labels(const Tensor& output, const Tensor& target) {
  return target.dtype() == DType::i64 && target.dim() == 1 && output.dim() == 2 && output.size(0) == target.size(0);
}

}  // namespace duet::parallel
