// The NCCL communicator over real GPUs, one thread per rank, with rank-dependent inputs whose
// results are known analytically (docs/design.md section 7): a one-rank group on one GPU (NCCL
// accepts it, so a one-GPU run tests the collectives, the streams, waits and abort), and every
// group size from 2 to the number of GPUs ([multigpu]: those need two physical GPUs, since NCCL
// refuses two ranks on one GPU). Every test here is tagged [nccl].
//
// Catch2 assertions are not thread-safe, so the rank threads only compute; the checks run on
// the test's thread after the ranks have joined. Where no NCCL group can exist (a build without
// NCCL, or virtual devices that all share GPU 0) the multi-GPU tests check the error that
// replaces it instead.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "comm_fixtures.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/ops.h"
#include "duet/kernels/cuda/runtime.h"
#include "duet/parallel/comm/local_communicator.h"
#include "duet/parallel/comm/nccl_communicator.h"
#include "duet/parallel/comm/ring.h"
#include "strategy_fixtures.h"

using namespace duet;
using namespace duet::parallel;
using Catch::Matchers::Contains;
using test::expected;
using test::Group;
using test::on_each_rank;

namespace {

bool virtual_devices() { return std::getenv("DUET_CUDA_VIRTUAL_DEVICES") != nullptr; }

// A group over cuda:0..n-1, or nothing once the clear error that replaces it has been checked.
std::optional<Group> nccl_group(int n, NcclOptions options = {}) {
  if (!nccl_is_built()) {
    CHECK_THROWS_WITH(make_nccl_group(test::gpus(n), options), Contains("built without NCCL"));
    return std::nullopt;
  }
  if (virtual_devices()) {
    CHECK_THROWS_WITH(make_nccl_group(test::gpus(n), options), Contains("use make_local_group"));
    return std::nullopt;
  }
  return make_nccl_group(test::gpus(n), options);
}

// What `call` threw, or "" when it returned.
template <class Fn> std::string error_of(Fn call) {
  try {
    call();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Equal within 1e-6 relative. NCCL's avg of floating tensors pre-multiplies every input by a
// rounded 1/n before summing, so for n not a power of two it is not exact (n = 7 misses some).
template <class T> bool close_to(const std::vector<T>& actual, const std::vector<T>& want) {
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

template <class T> void check_all_reduce(int n) {
  std::optional<Group> group = nccl_group(n);
  if (!group) return;
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
    auto results = test::all_reduce_each_shape<T>(*group, op, kShapes);
    double factor = test::reduced_factor(op, n);
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

void check_broadcast_and_reduce(int n) {
  std::optional<Group> group = nccl_group(n);
  if (!group) return;
  for (int root = 0; root < n; ++root)
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
      auto results = test::broadcast_and_reduce_each_shape(*group, root, op, kShapes);
      double reduced = test::reduced_factor(op, n);
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

void check_all_gather(int n) {
  std::optional<Group> group = nccl_group(n);
  if (!group) return;
  auto results = test::all_gather_each_shape<float>(*group, kShapes);
  auto integers = test::all_gather_each_shape<int64_t>(*group, {{5}});
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
    for (int q = 0; q < n; ++q) CHECK(integers[r][0][q].to_vector<int64_t>() == expected<int64_t>(5, q + 1));
  }
}

// Chunks of none, one, a few and many elements, odd as kShapes are.
const std::vector<int64_t> kChunkSizes = {0, 1, 7, 4099};

template <class T> void check_reduce_scatter(int n) {
  std::optional<Group> group = nccl_group(n);
  if (!group) return;
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
    auto results = test::reduce_scatter_each_size<T>(*group, op, kChunkSizes);
    for (int r = 0; r < n; ++r)
      for (size_t k = 0; k < kChunkSizes.size(); ++k) {
        const int64_t m = kChunkSizes[k];
        CAPTURE(n, r, name(op), m, dtype_name(dtype_of<T>()));
        const Tensor& out = results[r][2 * k];
        const Tensor& in = results[r][2 * k + 1];
        CHECK(out.device() == cuda_device(r));
        const std::vector<T> want = test::expected_chunk<T>(m, r, test::reduced_factor(op, n));
        if (op == ReduceOp::sum) CHECK(out.template to_vector<T>() == want);  // small integers: exact
        else CHECK(close_to(out.template to_vector<T>(), want));
        CHECK(in.template to_vector<T>() == expected<T>(n * m, r + 1));  // left unchanged
      }
  }
}

void check_all_gather_into(int n) {
  std::optional<Group> group = nccl_group(n);
  if (!group) return;
  for (bool in_place : {false, true}) {
    auto results = test::all_gather_into_each_size<float>(*group, kChunkSizes, in_place);
    auto integers = test::all_gather_into_each_size<int64_t>(*group, {5}, in_place);
    for (int r = 0; r < n; ++r) {
      for (size_t k = 0; k < kChunkSizes.size(); ++k) {
        CAPTURE(n, in_place, r, kChunkSizes[k]);
        CHECK(results[r][k].device() == cuda_device(r));
        CHECK(results[r][k].to_vector<float>() == test::gathered<float>(n, kChunkSizes[k]));
      }
      CHECK(integers[r][0].to_vector<int64_t>() == test::gathered<int64_t>(n, 5));
    }
  }
}

void check_reduce_scatters_in_flight(int n) {
  std::optional<Group> group = nccl_group(n);
  if (!group) return;
  auto results = on_each_rank(*group, [](Communicator& comm) { return test::reduce_scatters_in_flight(comm); });
  for (int r = 0; r < n; ++r) {
    CAPTURE(n, r);
    REQUIRE(results[r].size() == 6);
    for (int k = 0; k < 4; ++k) {
      const ReduceOp op = k % 2 ? ReduceOp::avg : ReduceOp::sum;
      CHECK(close_to(results[r][static_cast<size_t>(k)].to_vector<float>(),
                     test::expected_chunk<float>(3 + k, r, test::reduced_factor(op, n))));
    }
    CHECK(results[r][4].to_vector<float>() == expected<float>(5, test::reduced_factor(ReduceOp::sum, n)));
    CHECK(results[r][5].to_vector<float>() == test::gathered<float>(n, 4));
  }
}

}  // namespace

TEST_CASE("NCCL reduce_scatter sums and averages each rank's chunk", "[cuda][multigpu][nccl]") {
  for (int n = 2; n <= max_ranks(); ++n) {
    check_reduce_scatter<float>(n);
    check_reduce_scatter<double>(n);
  }
}

TEST_CASE("NCCL all_gather_into fills every rank's chunk, in place or not", "[cuda][multigpu][nccl]") {
  for (int n = 2; n <= max_ranks(); ++n) check_all_gather_into(n);
}

TEST_CASE("NCCL async reduce-scatters and all-gathers complete in order", "[cuda][multigpu][nccl]") {
  check_reduce_scatters_in_flight(2);
}

TEST_CASE("NCCL all_reduce sums and averages rank-dependent tensors", "[cuda][multigpu][nccl]") {
  for (int n = 2; n <= max_ranks(); ++n) {
    check_all_reduce<float>(n);
    check_all_reduce<double>(n);
  }
}

TEST_CASE("NCCL broadcast and reduce from every root", "[cuda][multigpu][nccl]") {
  for (int n = 2; n <= max_ranks(); ++n) check_broadcast_and_reduce(n);
}

TEST_CASE("NCCL all_gather returns every rank's tensor in rank order", "[cuda][multigpu][nccl]") {
  for (int n = 2; n <= max_ranks(); ++n) check_all_gather(n);
}

TEST_CASE("NCCL async all-reduces complete in order and their results reach the compute stream",
          "[cuda][multigpu][nccl]") {
  const int n = 2;
  std::optional<Group> group = nccl_group(n);
  if (!group) return;
  auto results = on_each_rank(*group, [&](Communicator& comm) {
    // The matmul is queued on the rank's compute stream while the collectives run on the other one.
    std::vector<Tensor> tensors = test::all_reduces_in_flight(comm, 256);
    // A kernel queued after wait() reads the reduced values (the compute stream waited for them).
    tensors.front().mul_(2.0);
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

TEST_CASE("NCCL communicators count bytes with the ring model", "[cuda][multigpu][nccl]") {
  const int n = max_ranks();
  std::optional<Group> group = nccl_group(n);
  if (!group) return;
  const int64_t count = 1001, bytes = count * 4;
  auto stats = on_each_rank(*group, [&](Communicator& comm) { return test::collective_stats(comm, count); });
  for (int r = 0; r < n; ++r) {
    CAPTURE(n, r);
    CHECK(stats[r][0].calls == 1);
    CHECK(stats[r][0].bytes_sent == ring::all_reduce_bytes_sent(count, 4, n, r));
    int64_t broadcast = r == n - 1 ? (n - 1) * bytes : 0;
    CHECK(stats[r][1].bytes_sent == broadcast + (n - 1) * bytes);
    CHECK(stats[r][1].calls == 3);
    // reduce_scatter of n * count elements and all_gather_into of count: n-1 chunks of count each.
    CHECK(stats[r][2].calls == 1);
    CHECK(stats[r][2].bytes_sent == (n - 1) * bytes);
    CHECK(stats[r][3].bytes_sent == (n - 1) * bytes);
  }
}

TEST_CASE("an NCCL rank's abort fails the other ranks' collectives", "[cuda][multigpu][nccl]") {
  std::optional<Group> group = nccl_group(2, {.timeout = std::chrono::milliseconds(60'000)});
  if (!group) return;
  std::string error;
  on_each_rank(*group, [&](Communicator& comm) {
    // A first collective that both ranks join: NCCL connects the ranks lazily, in the host call of
    // the first collective, where a rank that never joins would block it with no timeout. (Rank 0's
    // is inside error_of: rank 1 may abort while rank 0 still waits for it.)
    if (comm.rank() == 1) {
      comm.all_reduce(ones({16}, {.device = comm.device()}));
      comm.abort("its forward threw");
      return 0;
    }
    error = error_of([&] {
      comm.all_reduce(ones({16}, {.device = comm.device()}));
      comm.all_reduce(ones({16}, {.device = comm.device()}));
    });
    return 0;
  });
  CHECK_THAT(error, Contains("rank 1: its forward threw"));
}

TEST_CASE("an NCCL collective that a rank never joins times out", "[cuda][multigpu][nccl]") {
  std::optional<Group> group = nccl_group(2, {.timeout = std::chrono::milliseconds(300)});
  if (!group) return;
  std::string error;
  on_each_rank(*group, [&](Communicator& comm) {
    comm.all_reduce(ones({16}, {.device = comm.device()}));  // connects the ranks, as above
    if (comm.rank() == 0) error = error_of([&] { comm.all_reduce(ones({16}, {.device = comm.device()})); });
    return 0;
  });
  CHECK_THAT(error, Contains("timed out after 300 ms"));
}

// Registered with DUET_CUDA_VIRTUAL_DEVICES=4 by tests/CMakeLists.txt: four logical devices on GPU 0.
TEST_CASE("make_nccl_group refuses two virtual devices on one GPU", "[cuda][virtual][nccl]") {
  REQUIRE(virtual_devices());  // run through ctest, which sets DUET_CUDA_VIRTUAL_DEVICES=4
  REQUIRE(cuda::device_count() >= 2);
  const char* expected_error = nccl_is_built() ? "both run on physical GPU 0" : "built without NCCL";
  CHECK_THROWS_WITH(make_nccl_group(test::gpus(2)), Contains(expected_error));
  if (nccl_is_built()) CHECK_THROWS_WITH(make_nccl_group(test::gpus(2)), Contains("use make_local_group"));
  // One process per rank would put two ranks on GPU 0 as well: refused with the same advice.
  std::shared_ptr<Communicator> bootstrap = make_local_group({cpu(0)}).front();
  const char* one_process_error = nccl_is_built() ? "use make_local_group for virtual devices" : "built without NCCL";
  CHECK_THROWS_WITH(make_nccl_communicator(bootstrap, cuda_device(1)), Contains(one_process_error));
}

TEST_CASE("make_nccl_group rejects CPU devices and repeated devices", "[cuda][nccl]") {
  if (!nccl_is_built()) {
    CHECK_THROWS_WITH(make_nccl_group({cuda_device(0)}), Contains("built without NCCL"));
    return;
  }
  CHECK_THROWS_WITH(make_nccl_group({cpu(0)}), Contains("NCCL moves CUDA tensors"));
  CHECK_THROWS_WITH(make_nccl_group({cuda_device(0), cuda_device(0)}), Contains("appears twice"));
}

// One rank on cuda:0: NCCL accepts a one-rank communicator, so a one-GPU run reaches the
// collectives' launch path (streams, events, the warm-up, waits, abort), not just ncclGetVersion.

TEST_CASE("NCCL's collectives on a one-rank group", "[cuda][nccl]") {
  check_all_reduce<float>(1);
  check_all_reduce<double>(1);
  check_broadcast_and_reduce(1);
  check_all_gather(1);  // ends with a barrier
  check_reduce_scatter<float>(1);
  check_reduce_scatter<double>(1);
  check_all_gather_into(1);
  check_reduce_scatters_in_flight(1);
  std::optional<Group> group = nccl_group(1);
  if (!group) return;
  Communicator& comm = *group->front();
  CHECK(comm.world_size() == 1);
  CHECK_NOTHROW(comm.barrier());
}

// The collective's stream waits (through an event) for the work queued on the compute stream
// before it: here a matmul of several milliseconds writes the input. On one rank NCCL's in-place
// sum moves nothing, so the all_gather after the second matmul, which copies its input, is what
// would read unfinished values without that event.
TEST_CASE("a one-rank NCCL collective waits for the matmul that writes its input", "[cuda][nccl]") {
  std::optional<Group> group = nccl_group(1);
  if (!group) return;
  Communicator& comm = *group->front();
  const int64_t n = 4096;
  const Tensor x = ones({n, n}, {.device = comm.device()});
  Tensor reduced = matmul(x, x);
  std::shared_ptr<Work> work = comm.all_reduce_async(reduced, ReduceOp::avg);
  work->wait();
  Tensor gathered_input = matmul(x, x);
  std::vector<Tensor> gathered = comm.all_gather(gathered_input);
  REQUIRE(gathered.size() == 1);
  const std::vector<float> want(static_cast<size_t>(n * n), static_cast<float>(n));
  CHECK(reduced.to_vector<float>() == want);
  CHECK(gathered[0].to_vector<float>() == want);
}

TEST_CASE("waiting twice on an NCCL Work, and dropping one unwaited, are fine", "[cuda][nccl]") {
  std::optional<Group> group = nccl_group(1);
  if (!group) return;
  Communicator& comm = *group->front();
  Tensor t = test::rank_tensor<float>(comm, {1001}, 0);
  std::shared_ptr<Work> work = comm.all_reduce_async(t);
  CHECK_NOTHROW(work->wait());
  CHECK_NOTHROW(work->wait());
  CHECK(work->finished_at().has_value());
  CHECK(t.to_vector<float>() == expected<float>(1001, 1));

  // Dropped: its destructor orders the compute stream after the collective, so the tensor read
  // next, and the next collective, see its result.
  Tensor dropped = test::rank_tensor<float>(comm, {4099}, 0);
  comm.all_reduce_async(dropped, ReduceOp::avg).reset();
  CHECK(dropped.to_vector<float>() == expected<float>(4099, 1));
  Tensor next = test::rank_tensor<float>(comm, {7}, 0);
  comm.all_reduce(next);
  CHECK(next.to_vector<float>() == expected<float>(7, 1));
}

TEST_CASE("abort on a one-rank NCCL group fails its later collectives, naming the reason", "[cuda][nccl]") {
  std::optional<Group> group = nccl_group(1);
  if (!group) return;
  Communicator& comm = *group->front();
  comm.all_reduce(ones({16}, {.device = comm.device()}));
  comm.abort("its forward threw");
  CHECK_THAT(error_of([&] { comm.all_reduce(ones({16}, {.device = comm.device()})); }),
             Contains("rank 0: its forward threw"));
}

// Creating the group (ncclCommInitAll, then the warm-up all-reduce) is bounded by init_timeout,
// not by the collectives' timeout: a 1 ms collective timeout must not fail the creation.
TEST_CASE("NCCL's init timeout is separate from the collective timeout", "[cuda][nccl]") {
  std::optional<Group> group =
      nccl_group(1, {.timeout = std::chrono::milliseconds(1), .init_timeout = std::chrono::milliseconds(120'000)});
  if (!group) return;
  CHECK(group->size() == 1);
  CHECK_THROWS_WITH(make_nccl_group({cuda_device(0)}, {.init_timeout = std::chrono::milliseconds(0)}),
                    Contains("init_timeout must be positive"));
}

// NCCL connects ranks lazily, in the host call of their first collective; make_nccl_group's
// warm-up makes that happen at creation, so a rank whose peer fails before its first collective
// gets an error within the timeout instead of blocking in that host call forever.
TEST_CASE("an NCCL rank whose peer failed before its first collective is not blocked", "[cuda][multigpu][nccl]") {
  std::optional<Group> group = nccl_group(2, {.timeout = std::chrono::milliseconds(2'000)});
  if (!group) return;
  std::string error;
  on_each_rank(*group, [&](Communicator& comm) {
    if (comm.rank() == 1) comm.abort("it failed before its first collective");
    else error = error_of([&] { comm.all_reduce(ones({16}, {.device = comm.device()})); });
    return 0;
  });
  CHECK_THAT(error, Contains("failed"));
}
