// The NCCL communicator over real GPUs, one thread per rank, with rank-dependent inputs whose
// results are known analytically (docs/design.md section 7), for every group size from 2 to the
// number of GPUs.
//
// Catch2 assertions are not thread-safe, so the rank threads only compute; the checks run on
// the test's thread after the ranks have joined. Where no NCCL group can exist (a build without
// NCCL, or virtual devices that all share GPU 0) the multi-GPU tests check the error that
// replaces it instead.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

#include "duet/autograd/factory.h"
#include "duet/autograd/ops.h"
#include "duet/kernels/cuda/runtime.h"
#include "duet/parallel/comm/nccl_communicator.h"
#include "duet/parallel/comm/ring.h"

using namespace duet;
using namespace duet::parallel;
using Catch::Matchers::Contains;
using Group = std::vector<std::shared_ptr<Communicator>>;

namespace {

std::vector<Device> cuda_devices(int n) {
  std::vector<Device> devices;
  for (int i = 0; i < n; ++i) devices.push_back(cuda_device(i));
  return devices;
}

bool virtual_devices() { return std::getenv("DUET_CUDA_VIRTUAL_DEVICES") != nullptr; }

// A group over cuda:0..n-1, or nothing once the clear error that replaces it has been checked.
std::optional<Group> nccl_group(int n, NcclOptions options = {}) {
  if (!nccl_is_built()) {
    CHECK_THROWS_WITH(make_nccl_group(cuda_devices(n), options), Contains("built without NCCL"));
    return std::nullopt;
  }
  if (virtual_devices()) {
    CHECK_THROWS_WITH(make_nccl_group(cuda_devices(n), options), Contains("use make_local_group"));
    return std::nullopt;
  }
  return make_nccl_group(cuda_devices(n), options);
}

// Runs fn(comm) on one thread per rank and returns each rank's result; rethrows a rank's error.
template <class Fn>
auto on_each_rank(const Group& group, Fn fn) {
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

// t[i] = (r + 1) * (i + 1) on rank r's device: summed over n ranks, n(n+1)/2 * (i + 1).
template <class T>
Tensor rank_tensor(const Communicator& comm, Shape sizes, int r) {
  std::vector<T> values(static_cast<size_t>(numel(sizes)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>((r + 1) * static_cast<double>(i + 1));
  return from_vector(values, sizes, {.dtype = dtype_of<T>(), .device = comm.device()});
}

template <class T>
std::vector<T> expected(int64_t count, double factor) {
  std::vector<T> out(static_cast<size_t>(count));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(factor * static_cast<double>(i + 1));
  return out;
}

// Equal within 1e-6 relative. NCCL's avg of floating tensors pre-multiplies every input by a
// rounded 1/n before summing, so for n not a power of two it is not exact (n = 7 misses some).
template <class T>
bool close_to(const std::vector<T>& actual, const std::vector<T>& want) {
  if (actual.size() != want.size()) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    double a = static_cast<double>(actual[i]), w = static_cast<double>(want[i]);
    if (std::abs(a - w) > 1e-6 * std::abs(w)) return false;
  }
  return true;
}

// Odd sizes, so that no size divides evenly into NCCL's chunks.
const std::vector<Shape> kShapes = {{1}, {7}, {1001}, {3, 5}, {4099}};

int max_ranks() { return cuda::device_count(); }

template <class T>
void check_all_reduce(int n) {
  std::optional<Group> group = nccl_group(n);
  if (!group) return;
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
    auto results = on_each_rank(*group, [&](Communicator& comm) {
      std::vector<Tensor> outs;
      for (const Shape& sizes : kShapes) {
        outs.push_back(rank_tensor<T>(comm, sizes, comm.rank()));
        comm.all_reduce(outs.back(), op);
      }
      return outs;
    });
    double factor = op == ReduceOp::sum ? n * (n + 1) / 2.0 : (n + 1) / 2.0;
    for (int r = 0; r < n; ++r)
      for (size_t s = 0; s < kShapes.size(); ++s) {
        CAPTURE(n, r, name(op), shape_str(kShapes[s]), dtype_name(dtype_of<T>()));
        const Tensor& t = results[r][s];
        CHECK(t.device() == cuda_device(r));
        // Sums of small integers are exact in f32 and f64, whatever order NCCL adds them in.
        if (op == ReduceOp::sum) CHECK(t.to_vector<T>() == expected<T>(numel(kShapes[s]), factor));
        else CHECK(close_to(t.to_vector<T>(), expected<T>(numel(kShapes[s]), factor)));
      }
  }
}

}  // namespace

TEST_CASE("NCCL all_reduce sums and averages rank-dependent tensors", "[cuda][multigpu]") {
  for (int n = 2; n <= max_ranks(); ++n) {
    check_all_reduce<float>(n);
    check_all_reduce<double>(n);
  }
}

TEST_CASE("NCCL broadcast and reduce from every root", "[cuda][multigpu]") {
  for (int n = 2; n <= max_ranks(); ++n) {
    std::optional<Group> group = nccl_group(n);
    if (!group) return;
    for (int root = 0; root < n; ++root)
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
        auto results = on_each_rank(*group, [&](Communicator& comm) {
          std::vector<Tensor> outs;
          for (const Shape& sizes : kShapes) {
            outs.push_back(rank_tensor<double>(comm, sizes, comm.rank()));
            comm.broadcast(outs.back(), root);
            outs.push_back(rank_tensor<float>(comm, sizes, comm.rank()));
            comm.reduce(outs.back(), root, op);
          }
          return outs;
        });
        double reduced = op == ReduceOp::sum ? n * (n + 1) / 2.0 : (n + 1) / 2.0;
        for (int r = 0; r < n; ++r)
          for (size_t s = 0; s < kShapes.size(); ++s) {
            CAPTURE(n, root, r, name(op), shape_str(kShapes[s]));
            int64_t count = numel(kShapes[s]);
            CHECK(results[r][2 * s].to_vector<double>() == expected<double>(count, root + 1));
            // The root gets the reduction; the other ranks keep their input.
            const double factor = r == root ? reduced : r + 1;
            CHECK(close_to(results[r][2 * s + 1].to_vector<float>(), expected<float>(count, factor)));
          }
      }
  }
}

TEST_CASE("NCCL all_gather returns every rank's tensor in rank order", "[cuda][multigpu]") {
  for (int n = 2; n <= max_ranks(); ++n) {
    std::optional<Group> group = nccl_group(n);
    if (!group) return;
    auto results = on_each_rank(*group, [&](Communicator& comm) {
      std::vector<std::vector<Tensor>> outs;
      for (const Shape& sizes : kShapes) outs.push_back(comm.all_gather(rank_tensor<float>(comm, sizes, comm.rank())));
      outs.push_back(comm.all_gather(rank_tensor<int64_t>(comm, {5}, comm.rank())));
      comm.barrier();
      return outs;
    });
    for (int r = 0; r < n; ++r) {
      for (size_t s = 0; s < kShapes.size(); ++s) {
        REQUIRE(results[r][s].size() == static_cast<size_t>(n));
        for (int q = 0; q < n; ++q) {
          CAPTURE(n, r, q, shape_str(kShapes[s]));
          const Tensor& part = results[r][s][q];
          CHECK(part.sizes() == kShapes[s]);
          CHECK(part.device() == cuda_device(r));
          CHECK(part.to_vector<float>() == expected<float>(numel(kShapes[s]), q + 1));
        }
      }
      for (int q = 0; q < n; ++q) CHECK(results[r].back()[q].to_vector<int64_t>() == expected<int64_t>(5, q + 1));
    }
  }
}

TEST_CASE("NCCL async all-reduces complete in order and their results reach the compute stream",
          "[cuda][multigpu]") {
  const int n = 2;
  std::optional<Group> group = nccl_group(n);
  if (!group) return;
  auto results = on_each_rank(*group, [&](Communicator& comm) {
    std::vector<Tensor> tensors;
    std::vector<std::shared_ptr<Work>> works;
    for (int k = 0; k < 6; ++k) {
      tensors.push_back(rank_tensor<float>(comm, {100 + k}, comm.rank()));
      works.push_back(comm.all_reduce_async(tensors.back(), k % 2 ? ReduceOp::avg : ReduceOp::sum));
    }
    // Compute queued on the rank's compute stream while the collectives run on the other one.
    Tensor x = ones({256, 256}, {.device = comm.device()});
    Tensor y = matmul(x, x);
    for (auto& w : works) w->wait();
    works.front()->wait();  // waiting again is fine
    // A kernel queued after wait() reads the reduced values (the compute stream waited for them).
    tensors.front().mul_(2.0);
    tensors.push_back(y);
    return tensors;
  });
  for (int r = 0; r < n; ++r) {
    CHECK(results[r][0].to_vector<float>() == expected<float>(100, 2 * 3.0));
    for (int k = 1; k < 6; ++k) {
      CAPTURE(r, k);
      CHECK(results[r][k].to_vector<float>() == expected<float>(100 + k, k % 2 ? 1.5 : 3.0));
    }
    CHECK(results[r][6].to_vector<float>() == std::vector<float>(256 * 256, 256.0f));
  }
}

TEST_CASE("NCCL communicators count bytes with the ring model", "[cuda][multigpu]") {
  const int n = max_ranks();
  std::optional<Group> group = nccl_group(n);
  if (!group) return;
  const int64_t count = 1001, bytes = count * 4;
  auto stats = on_each_rank(*group, [&](Communicator& comm) {
    comm.all_reduce(zeros({count}, {.device = comm.device()}));
    CommStats all_reduce = comm.stats();
    comm.reset_stats();
    comm.broadcast(zeros({count}, {.device = comm.device()}), n - 1);
    comm.all_gather(zeros({count}, {.device = comm.device()}));
    comm.barrier();
    return std::vector<CommStats>{all_reduce, comm.stats()};
  });
  for (int r = 0; r < n; ++r) {
    CAPTURE(n, r);
    CHECK(stats[r][0].calls == 1);
    CHECK(stats[r][0].bytes_sent == ring::all_reduce_bytes_sent(count, 4, n, r));
    int64_t broadcast = r == n - 1 ? (n - 1) * bytes : 0;
    CHECK(stats[r][1].bytes_sent == broadcast + (n - 1) * bytes);
    CHECK(stats[r][1].calls == 3);
  }
}

TEST_CASE("an NCCL rank's abort fails the other ranks' collectives", "[cuda][multigpu]") {
  std::optional<Group> group = nccl_group(2, {.timeout = std::chrono::milliseconds(60'000)});
  if (!group) return;
  std::string error;
  on_each_rank(*group, [&](Communicator& comm) {
    // A first collective that both ranks join: NCCL connects the ranks lazily, in the host call of
    // the first collective, where a rank that never joins would block it with no timeout. (Rank 0's
    // is in the try: rank 1 may abort while rank 0 still waits for it.)
    if (comm.rank() == 1) {
      comm.all_reduce(ones({16}, {.device = comm.device()}));
      comm.abort("its forward threw");
      return 0;
    }
    try {
      comm.all_reduce(ones({16}, {.device = comm.device()}));
      comm.all_reduce(ones({16}, {.device = comm.device()}));
    } catch (const std::exception& e) {
      error = e.what();
    }
    return 0;
  });
  CHECK_THAT(error, Contains("rank 1: its forward threw"));
}

TEST_CASE("an NCCL collective that a rank never joins times out", "[cuda][multigpu]") {
  std::optional<Group> group = nccl_group(2, {.timeout = std::chrono::milliseconds(300)});
  if (!group) return;
  std::string error;
  on_each_rank(*group, [&](Communicator& comm) {
    comm.all_reduce(ones({16}, {.device = comm.device()}));  // connects the ranks, as above
    if (comm.rank() == 0) {
      try {
        comm.all_reduce(ones({16}, {.device = comm.device()}));
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    return 0;
  });
  CHECK_THAT(error, Contains("timed out after 300 ms"));
}

// Registered with DUET_CUDA_VIRTUAL_DEVICES=4 by tests/CMakeLists.txt: four logical devices on GPU 0.
TEST_CASE("make_nccl_group refuses two virtual devices on one GPU", "[cuda][virtual]") {
  REQUIRE(virtual_devices());  // run through ctest, which sets DUET_CUDA_VIRTUAL_DEVICES=4
  REQUIRE(cuda::device_count() >= 2);
  const char* expected_error = nccl_is_built() ? "both run on physical GPU 0" : "built without NCCL";
  CHECK_THROWS_WITH(make_nccl_group(cuda_devices(2)), Contains(expected_error));
  if (nccl_is_built()) CHECK_THROWS_WITH(make_nccl_group(cuda_devices(2)), Contains("use make_local_group"));
}

TEST_CASE("make_nccl_group rejects CPU devices and repeated devices", "[cuda]") {
  if (!nccl_is_built()) {
    CHECK_THROWS_WITH(make_nccl_group({cuda_device(0)}), Contains("built without NCCL"));
    return;
  }
  CHECK_THROWS_WITH(make_nccl_group({cpu(0)}), Contains("NCCL moves CUDA tensors"));
  CHECK_THROWS_WITH(make_nccl_group({cuda_device(0), cuda_device(0)}), Contains("appears twice"));
}
