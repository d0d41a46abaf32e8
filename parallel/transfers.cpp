#include "duet/parallel/transfers.h"

#include <algorithm>
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

std::vector<std::vector<size_t>> coalesced_groups(const std::vector<Tensor>& tensors, int64_t buffer_bytes) {
  struct Open {  // the group now filling for one kind of tensor
    Device device;
    DType dtype;
    bool requires_grad;
    size_t group;
    int64_t bytes;
    bool holds(const Tensor& t) const {
      return device == t.device() && dtype == t.dtype() && requires_grad == t.requires_grad();
    }
  };
  std::vector<std::vector<size_t>> groups;
  std::vector<Open> open;  // a handful of devices and dtypes: a linear search is enough
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (!t.defined()) continue;
    auto it = std::find_if(open.begin(), open.end(), [&](const Open& o) { return o.holds(t); });
    if (it == open.end()) {
      it = open.insert(open.end(), Open{t.device(), t.dtype(), t.requires_grad(), groups.size(), 0});
      groups.emplace_back();
    } else if (it->bytes > 0 && it->bytes + t.nbytes() > buffer_bytes) {
      it->group = groups.size();
      it->bytes = 0;
      groups.emplace_back();
    }
    groups[it->group].push_back(i);
    it->bytes += t.nbytes();
  }
  return groups;
}

std::vector<Tensor> moved_coalesced(const std::vector<Tensor>& tensors, Device target, const LinkModel& link) {
  std::vector<Tensor> out(tensors.size()), elsewhere(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].defined()) continue;
    if (tensors[i].device() == target) out[i] = tensors[i].detach();
    else elsewhere[i] = tensors[i];
  }
  for (const std::vector<size_t>& group : coalesced_groups(elsewhere)) {
    const Tensor& first = tensors[group[0]];
    if (group.size() == 1) {  // nothing to pack
      out[group[0]] = moved(first, target, link);
      continue;
    }
    int64_t numel = 0;
    for (size_t i : group) numel += tensors[i].numel();
    Tensor packed = empty({numel}, {.dtype = first.dtype(), .device = first.device()});
    Tensor received = empty({numel}, {.dtype = first.dtype(), .device = target});
    int64_t offset = 0;
    for (size_t i : group) {
      const Tensor& t = tensors[i];
      kernels::copy(t.detach(), packed.narrow(0, offset, t.numel()).view(t.sizes()));
      out[i] = received.narrow(0, offset, t.numel()).view(t.sizes());
      offset += t.numel();
    }
    copy_between(packed, received, link);
  }
  return out;
}

}  // namespace duet::parallel::transfers
