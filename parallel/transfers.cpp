#include "duet/parallel/transfers.h"

#include <chrono>

#include "duet/autograd/factory.h"
#include "duet/kernels/kernels.h"
#include "duet/parallel/comm/comm_counter.h"

namespace duet::parallel::transfers {

void copy_between(const Tensor& from, const Tensor& to, const LinkModel& link) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t bytes = from.nbytes();
  if (to.numel() > 0) kernels::copy(from, to);
  comm_counter().add(bytes);
  link.wait_out(start, bytes);
}

Tensor moved(const Tensor& t, Device device, const LinkModel& link) {
  if (t.device() == device) return t.detach();
  Tensor out = empty(t.sizes(), {.dtype = t.dtype(), .device = device});
  copy_between(t, out, link);
  return out;
}

Tensor concat_onto(const std::vector<Tensor>& pieces, const std::vector<int64_t>& lengths, const Shape& shape,
                   DType dtype, Device target, const LinkModel& link) {
  Tensor out = empty(shape, {.dtype = dtype, .device = target});
  int64_t start = 0;
  for (size_t k = 0; k < pieces.size(); ++k) {
    if (lengths[k] > 0) {
      Tensor rows = out.narrow(0, start, lengths[k]);
      if (pieces[k].defined() && pieces[k].device() != target) {
        copy_between(pieces[k], rows, link);
      } else if (pieces[k].defined()) {
        kernels::copy(pieces[k], rows);
      } else {
        kernels::fill(rows, 0.0);
      }
    }
    start += lengths[k];
  }
  return out;
}

Tensor sum_onto(const std::vector<Tensor>& terms, Device target, const LinkModel& link) {
  Tensor sum;
  bool owned = false;  // whether `sum` is our own buffer, or still an alias of a term
  for (const Tensor& term : terms) {
    if (!term.defined()) continue;
    Tensor here = moved(term, target, link);
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
