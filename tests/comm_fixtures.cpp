#include "comm_fixtures.h"

#include "duet/autograd/ops.h"

namespace duet::test {

using parallel::CommStats;
using parallel::Communicator;
using parallel::ReduceOp;
using parallel::Work;

std::vector<std::vector<Tensor>> broadcast_and_reduce_each_shape(const Group& group, int root, ReduceOp op,
                                                                 const std::vector<Shape>& shapes) {
  return on_each_rank(group, [&](Communicator& comm) {
    std::vector<Tensor> outs;
    for (const Shape& sizes : shapes) {
      outs.push_back(rank_tensor<double>(comm, sizes, comm.rank()));
      comm.broadcast(outs.back(), root);
      outs.push_back(rank_tensor<float>(comm, sizes, comm.rank()));
      comm.reduce(outs.back(), root, op);
    }
    return outs;
  });
}

std::vector<Tensor> all_reduces_in_flight(Communicator& comm, int64_t matmul_size) {
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Work>> works;
  for (int k = 0; k < 6; ++k) {
    tensors.push_back(rank_tensor<float>(comm, {100 + k}, comm.rank()));
    works.push_back(comm.all_reduce_async(tensors.back(), k % 2 ? ReduceOp::avg : ReduceOp::sum));
  }
  // Compute on the rank's own device while the collectives run.
  Tensor x = ones({matmul_size, matmul_size}, {.device = comm.device()});
  Tensor y = matmul(x, x);
  for (auto& w : works) w->wait();
  works.front()->wait();  // waiting again is fine
  tensors.push_back(y);
  return tensors;
}

std::vector<CommStats> collective_stats(Communicator& comm, int64_t count) {
  comm.all_reduce(zeros({count}, {.device = comm.device()}));
  CommStats all_reduce = comm.stats();
  comm.reset_stats();
  comm.broadcast(zeros({count}, {.device = comm.device()}), comm.world_size() - 1);
  comm.all_gather(zeros({count}, {.device = comm.device()}));
  comm.barrier();
  return {all_reduce, comm.stats()};
}

}  // namespace duet::test
