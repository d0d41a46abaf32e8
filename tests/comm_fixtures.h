// What the communicator tests share, whatever the communicator: the local ones over logical CPU
// devices (tests/cpu/test_communicators.cpp) and NCCL over GPUs (tests/cuda/test_nccl.cpp).
// Inputs depend on the rank so that every collective's result is known in closed form
// (docs/design.md section 7), and each collective is driven the same way on every communicator.
//
// Catch2 assertions are not thread-safe, so nothing here asserts: the rank threads only compute,
// and each test checks the results on its own thread after the ranks have joined.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "duet/autograd/factory.h"
#include "duet/parallel/comm/communicator.h"

namespace duet::test {

using Group = std::vector<std::shared_ptr<parallel::Communicator>>;

// Runs fn(comm) on one thread per rank and returns each rank's result; rethrows a rank's error.
template <class Fn> auto on_each_rank(const Group& group, Fn fn) {
  using Result = decltype(fn(*group[0]));
  std::vector<Result> results(group.size());
  std::vector<std::exception_ptr> errors(group.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < group.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        results[r] = fn(*group[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return results;
}

// factor * (i + 1) for i in [0, count): what rank_tensor's element i becomes after a collective.
template <class T> std::vector<T> expected(int64_t count, double factor) {
  std::vector<T> out(static_cast<size_t>(count));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(factor * static_cast<double>(i + 1));
  return out;
}

// t[i] = (r + 1) * (i + 1) on rank r's device: summed over n ranks, n(n+1)/2 * (i + 1).
template <class T> Tensor rank_tensor(const parallel::Communicator& comm, Shape sizes, int r) {
  return from_vector(expected<T>(numel(sizes), r + 1), sizes, {.dtype = dtype_of<T>(), .device = comm.device()});
}

// What every rank's rank_tensor becomes under the reduction op: their sum or their mean.
inline double reduced_factor(parallel::ReduceOp op, int n) {
  return op == parallel::ReduceOp::sum ? n * (n + 1) / 2.0 : (n + 1) / 2.0;
}

// Per rank, one rank_tensor<T> of each shape after all_reduce(op), in the order of `shapes`.
template <class T> std::vector<std::vector<Tensor>> all_reduce_each_shape(const Group& group, parallel::ReduceOp op,
                                                                          const std::vector<Shape>& shapes) {
  return on_each_rank(group, [&](parallel::Communicator& comm) {
    std::vector<Tensor> outs;
    for (const Shape& sizes : shapes) {
      outs.push_back(rank_tensor<T>(comm, sizes, comm.rank()));
      comm.all_reduce(outs.back(), op);
    }
    return outs;
  });
}

// Per rank, two tensors for each shape: at 2s an f64 rank_tensor after broadcast from `root`, at
// 2s + 1 an f32 one after reduce(op) to `root` (the root gets the reduction, the others keep
// their input).
std::vector<std::vector<Tensor>> broadcast_and_reduce_each_shape(const Group& group, int root, parallel::ReduceOp op,
                                                                 const std::vector<Shape>& shapes);

// Per rank, per shape, every rank's rank_tensor<T> as all_gather returns it; a barrier follows.
template <class T>
std::vector<std::vector<std::vector<Tensor>>> all_gather_each_shape(const Group& group,
                                                                    const std::vector<Shape>& shapes) {
  return on_each_rank(group, [&](parallel::Communicator& comm) {
    std::vector<std::vector<Tensor>> outs;
    for (const Shape& sizes : shapes) outs.push_back(comm.all_gather(rank_tensor<T>(comm, sizes, comm.rank())));
    comm.barrier();
    return outs;
  });
}

// Rank r's chunk of m elements of expected<T>(n * m, factor): factor * (r * m + j + 1), j < m.
// What reduce_scatter leaves on rank r when every rank's input is a rank_tensor of n * m.
template <class T> std::vector<T> expected_chunk(int64_t m, int r, double factor) {
  std::vector<T> out(static_cast<size_t>(m));
  for (size_t j = 0; j < out.size(); ++j) out[j] = static_cast<T>(factor * static_cast<double>(r * m + 1 + j));
  return out;
}

// What all_gather_into leaves in every rank's output when rank q gave rank_tensor<T>(m, q):
// chunk q holds (q + 1) * (j + 1).
template <class T> std::vector<T> gathered(int n, int64_t m) {
  std::vector<T> out;
  for (int q = 0; q < n; ++q) {
    std::vector<T> part = expected<T>(m, q + 1);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

// Per rank, for each chunk size m, two tensors: at 2k the output of reduce_scatter(op) of a
// rank_tensor<T> of world_size * m elements (the output filled with -1 first), at 2k + 1 that
// input afterwards (reduce_scatter must leave it unchanged).
template <class T> std::vector<std::vector<Tensor>> reduce_scatter_each_size(const Group& group, parallel::ReduceOp op,
                                                                             const std::vector<int64_t>& chunk_sizes) {
  return on_each_rank(group, [&](parallel::Communicator& comm) {
    std::vector<Tensor> outs;
    for (int64_t m : chunk_sizes) {
      Tensor in = rank_tensor<T>(comm, {comm.world_size() * m}, comm.rank());
      Tensor out = full({m}, -1.0, {.dtype = dtype_of<T>(), .device = comm.device()});
      comm.reduce_scatter(in, out, op);
      outs.push_back(out);
      outs.push_back(in);
    }
    return outs;
  });
}

// Per rank, for each chunk size m, the [world_size, m] output of all_gather_into of
// rank_tensor<T>(m): in place (the input is the output's own row, the rest filled with -1) or
// from a tensor of its own.
template <class T> std::vector<std::vector<Tensor>> all_gather_into_each_size(const Group& group,
                                                                              const std::vector<int64_t>& chunk_sizes,
                                                                              bool in_place) {
  return on_each_rank(group, [&](parallel::Communicator& comm) {
    std::vector<Tensor> outs;
    const int n = comm.world_size(), r = comm.rank();
    for (int64_t m : chunk_sizes) {
      Tensor out = full({n, m}, -1.0, {.dtype = dtype_of<T>(), .device = comm.device()});
      Tensor mine = rank_tensor<T>(comm, {m}, r);
      if (in_place) {
        Tensor row = out.as_strided({m}, {1}, r * m);
        row.copy_(mine);
        mine = row;
      }
      comm.all_gather_into(mine, out);
      outs.push_back(out);
    }
    return outs;
  });
}

// On one rank, in flight at once and waited for in order: reduce_scatter of f32 rank_tensors of
// world_size * (3 + k) elements (k = 0..3; summed for even k, averaged for odd), an all_reduce of
// rank_tensor(5) between them, and an in-place all_gather_into of rank_tensor(4) after them.
// Returns the four outputs, the all-reduced tensor and the gathered one.
std::vector<Tensor> reduce_scatters_in_flight(parallel::Communicator& comm);

// On one rank: six all-reduces in flight at once (k = 0..5: an f32 rank_tensor of 100 + k
// elements, summed for even k, averaged for odd), while a [size, size] matmul of ones runs on
// the rank's device. Returns the six tensors once each has been waited for (the first twice,
// which must be fine), then the matmul's result (every element `size`).
std::vector<Tensor> all_reduces_in_flight(parallel::Communicator& comm, int64_t matmul_size);

// On one rank: {the stats of an all_reduce of `count` f32 zeros, then those of a broadcast from
// the last rank, an all_gather and a barrier, then those of a reduce_scatter of world_size *
// count f32 zeros, then those of an all_gather_into of count}, the stats reset in between.
std::vector<parallel::CommStats> collective_stats(parallel::Communicator& comm, int64_t count);

}  // namespace duet::test
