#include "duet/parallel/transfers.h"

#include "duet/autograd/factory.h"
#include "duet/kernels/kernels.h"
#include "duet/parallel/comm/comm_counter.h"

namespace duet::parallel::transfers {

Tensor moved(const Tensor& t, Device device) {
  if (t.device() == device) return t.detach();
  Tensor out = empty(t.sizes(), {.dtype = t.dtype(), .device = device});
  if (out.numel() > 0) kernels::copy(t, out);
  comm_counter().add(t.numel() * static_cast<int64_t>(t.element_size()));
  return out;
}

Tensor concat_onto(const std::vector<Tensor>& pieces, const std::vector<int64_t>& lengths, const Shape& shape,
                   DType dtype, Device target) {
  Tensor out = empty(shape, {.dtype = dtype, .device = target});
  int64_t start = 0;
  for (size_t k = 0; k < pieces.size(); ++k) {
    if (lengths[k] > 0) {
      Tensor rows = out.narrow(0, start, lengths[k]);
      if (pieces[k].defined()) {
        kernels::copy(pieces[k], rows);
        if (pieces[k].device() != target) {
          comm_counter().add(pieces[k].numel() * static_cast<int64_t>(pieces[k].element_size()));
        }
      } else {
        kernels::fill(rows, 0.0);
      }
    }
    start += lengths[k];
  }
  return out;
}

Tensor sum_onto(const std::vector<Tensor>& terms, Device target) {
  Tensor sum;
  bool owned = false;  // whether `sum` is our own buffer, or still an alias of a term
  for (const Tensor& term : terms) {
    if (!term.defined()) continue;
    Tensor here = moved(term, target);
    if (!sum.defined()) {
      owned = term.device() != target;
      sum = std::move(here);
    } else if (!owned) {
      Tensor fresh = empty(sum.sizes(), {.dtype = sum.dtype(), .device = target});
      kernels::binary(kernels::BinaryOp::add, sum, here, fresh);
      sum = std::move(fresh);
      owned = true;
    } else {
      kernels::binary(kernels::BinaryOp::add, sum, here, sum);
    }
  }
  return sum;
}

}  // namespace duet::parallel::transfers
