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
  CommStats others = comm.stats();
  const TensorOptions on_device{.device = comm.device()};
  comm.reset_stats();
  comm.reduce_scatter(zeros({comm.world_size() * count}, on_device), zeros({count}, on_device));
  CommStats reduce_scatter = comm.stats();
  comm.reset_stats();
  comm.all_gather_into(zeros({count}, on_device), zeros({comm.world_size() * count}, on_device));
  return {all_reduce, others, reduce_scatter, comm.stats()};
}

std::vector<Tensor> reduce_scatters_in_flight(Communicator& comm) {
  const int n = comm.world_size(), r = comm.rank();
  std::vector<Tensor> inputs, outs;
  std::vector<std::shared_ptr<Work>> works;
  for (int64_t k = 0; k < 4; ++k) {
    inputs.push_back(rank_tensor<float>(comm, {n * (3 + k)}, r));
    outs.push_back(zeros({3 + k}, {.device = comm.device()}));
    works.push_back(comm.reduce_scatter_async(inputs.back(), outs.back(), k % 2 ? ReduceOp::avg : ReduceOp::sum));
    if (k == 1) {
      outs.push_back(rank_tensor<float>(comm, {5}, r));
      works.push_back(comm.all_reduce_async(outs.back()));
    }
  }
  Tensor gathered = zeros({n * 4}, {.device = comm.device()});
  Tensor own_chunk = gathered.as_strided({4}, {1}, r * 4);
  own_chunk.copy_(rank_tensor<float>(comm, {4}, r));
  works.push_back(comm.all_gather_into_async(own_chunk, gathered));
  for (auto& w : works) w->wait();
  // The all-reduce went in third: move it after the four reduce-scatter outputs.
  Tensor all_reduced = outs[2];
  outs.erase(outs.begin() + 2);
  outs.push_back(all_reduced);
  outs.push_back(gathered);
  return outs;
}

}  // namespace duet::test
