#include "duet/parallel/broadcast_coalesced.h"

#include <map>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"

namespace duet::parallel {

void broadcast_coalesced(Communicator& comm, const std::vector<Tensor>& tensors, int root) {
  // By dtype, in the order each dtype first appears (the same on every rank).
  std::vector<DType> dtypes;
  std::map<DType, std::vector<Tensor>> groups;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (!groups.count(t.dtype())) dtypes.push_back(t.dtype());
    groups[t.dtype()].push_back(t);
  }
  NoGradGuard no_grad;
  const bool is_root = comm.rank() == root;
  for (DType dtype : dtypes) {
    const std::vector<Tensor>& group = groups[dtype];
    int64_t numel = 0;
    for (const Tensor& t : group) numel += t.numel();
    Tensor flat = empty({numel}, {.dtype = dtype, .device = comm.device()});
    // Each tensor's place in the flat one, shaped like it.
    auto place = [&flat](const Tensor& t, int64_t offset) { return flat.narrow(0, offset, t.numel()).view(t.sizes()); };
    int64_t offset = 0;
    for (const Tensor& t : group) {
      if (is_root) place(t, offset).copy_(t);
      offset += t.numel();
    }
    comm.broadcast(flat, root);
    if (is_root) continue;
    offset = 0;
    for (const Tensor& t : group) {
      t.copy_(place(t, offset));
      offset += t.numel();
    }
  }
}

}  // namespace duet::parallel
