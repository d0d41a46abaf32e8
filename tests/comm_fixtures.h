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

// On one rank: six all-reduces in flight at once (k = 0..5: an f32 rank_tensor of 100 + k
// elements, summed for even k, averaged for odd), while a [size, size] matmul of ones runs on
// the rank's device. Returns the six tensors once each has been waited for (the first twice,
// which must be fine), then the matmul's result (every element `size`).
std::vector<Tensor> all_reduces_in_flight(parallel::Communicator& comm, int64_t matmul_size);

// On one rank: {the stats of an all_reduce of `count` f32 zeros, then those of a broadcast from
// the last rank, an all_gather and a barrier}, the stats reset in between.
std::vector<parallel::CommStats> collective_stats(parallel::Communicator& comm, int64_t count);

}  // namespace duet::test
