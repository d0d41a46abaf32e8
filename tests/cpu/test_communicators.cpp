// The local communicators (ring and naive) over logical CPU devices, one thread per rank, with
// rank-dependent inputs whose results are known analytically (docs/design.md section 7). The
// rank threads only compute (tests/comm_fixtures.h drives them, as it does NCCL's); the checks run
// on the test's thread after the ranks have joined.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "comm_fixtures.h"
#include "duet/autograd/factory.h"
#include "duet/parallel/comm/local_communicator.h"
#include "duet/parallel/comm/mpi_communicator.h"
#include "duet/parallel/comm/ring.h"
#include "strategy_fixtures.h"

using namespace duet;
using namespace duet::parallel;
using test::expected;
using test::Group;
using test::on_each_rank;
using test::rank_tensor;

namespace {

Group make_group(int n, LocalAlgorithm algorithm, std::chrono::milliseconds timeout = kDefaultCommTimeout) {
  return make_local_group(test::cpus(n), {.algorithm = algorithm, .timeout = timeout});
}

const std::vector<Shape> kShapes = {{1}, {7}, {1001}, {3, 5}, {12}};
const LocalAlgorithm kAlgorithms[] = {LocalAlgorithm::ring, LocalAlgorithm::naive};

const char* algorithm_name(LocalAlgorithm a) { return a == LocalAlgorithm::ring ? "ring" : "naive"; }

template <class T> void check_all_reduce(LocalAlgorithm algorithm, int n) {
  Group group = make_group(n, algorithm);
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
    auto results = test::all_reduce_each_shape<T>(group, op, kShapes);
    double factor = test::reduced_factor(op, n);
    for (int r = 0; r < n; ++r)
      for (size_t s = 0; s < kShapes.size(); ++s) {
        CAPTURE(algorithm_name(algorithm), n, r, name(op), shape_str(kShapes[s]), dtype_name(dtype_of<T>()));
        const Tensor& t = results[r][s];
        CHECK(t.sizes() == kShapes[s]);
        CHECK(t.device() == cpu(r));
        CHECK(t.to_vector<T>() == expected<T>(numel(kShapes[s]), factor));
      }
  }
}

}  // namespace

TEST_CASE("local all_reduce sums and averages rank-dependent tensors", "[comm]") {
  for (LocalAlgorithm algorithm : kAlgorithms)
    for (int n = 1; n <= 4; ++n) {
      check_all_reduce<float>(algorithm, n);
      check_all_reduce<double>(algorithm, n);
    }
}

TEST_CASE("local broadcast and reduce from every root", "[comm]") {
  for (LocalAlgorithm algorithm : kAlgorithms)
    for (int n = 1; n <= 4; ++n) {
      Group group = make_group(n, algorithm);
      for (int root = 0; root < n; ++root)
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
          auto results = test::broadcast_and_reduce_each_shape(group, root, op, kShapes);
          double reduced = test::reduced_factor(op, n);
          for (int r = 0; r < n; ++r)
            for (size_t s = 0; s < kShapes.size(); ++s) {
              CAPTURE(algorithm_name(algorithm), n, root, r, name(op), shape_str(kShapes[s]));
              int64_t count = numel(kShapes[s]);
              CHECK(results[r][2 * s].to_vector<double>() == expected<double>(count, root + 1));
              // The root gets the reduction; the other ranks keep their input.
              CHECK(results[r][2 * s + 1].to_vector<float>() == expected<float>(count, r == root ? reduced : r + 1));
            }
        }
    }
}

TEST_CASE("local all_gather returns every rank's tensor in rank order", "[comm]") {
  for (LocalAlgorithm algorithm : kAlgorithms)
    for (int n = 1; n <= 4; ++n) {
      Group group = make_group(n, algorithm);
      auto results = test::all_gather_each_shape<float>(group, kShapes);
      for (int r = 0; r < n; ++r)
        for (size_t s = 0; s < kShapes.size(); ++s) {
          REQUIRE(results[r][s].size() == static_cast<size_t>(n));
          for (int q = 0; q < n; ++q) {
            CAPTURE(algorithm_name(algorithm), n, r, q, shape_str(kShapes[s]));
            const Tensor& part = results[r][s][q];
            CHECK(part.sizes() == kShapes[s]);
            CHECK(part.device() == cpu(r));
            CHECK(part.to_vector<float>() == expected<float>(numel(kShapes[s]), q + 1));
          }
        }
    }
}

TEST_CASE("local barrier waits for every rank", "[comm]") {
  Group group = make_group(3, LocalAlgorithm::ring);
  std::atomic<int> before{0};
  auto seen = on_each_rank(group, [&](Communicator& comm) {
    if (comm.rank() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    before.fetch_add(1);
    comm.barrier();
    return before.load();  // every rank incremented before anyone left
  });
  for (int s : seen) CHECK(s == 3);
}

TEST_CASE("local async all-reduces in flight complete in order", "[comm]") {
  for (LocalAlgorithm algorithm : kAlgorithms) {
    const int n = 3;
    Group group = make_group(n, algorithm);
    auto results = on_each_rank(group, [](Communicator& comm) { return test::all_reduces_in_flight(comm, 64); });
    for (int r = 0; r < n; ++r) {
      for (int k = 0; k < 6; ++k) {
        CAPTURE(algorithm_name(algorithm), r, k);
        CHECK(results[r][k].to_vector<float>() == expected<float>(100 + k, k % 2 ? 2.0 : 6.0));
      }
      CHECK(results[r][6].to_vector<float>() == std::vector<float>(64 * 64, 64.0f));
    }
  }
}

TEST_CASE("local ring all_reduce leaves bit-identical results on every rank", "[comm]") {
  const int n = 4;
  Group group = make_group(n, LocalAlgorithm::ring);
  auto results = on_each_rank(group, [&](Communicator& comm) {
    Generator generator(1234 + static_cast<uint64_t>(comm.rank()));
    Tensor t = randn({1001}, {.device = comm.device()}, &generator);
    comm.all_reduce(t, ReduceOp::avg);
    return t.to_vector<float>();
  });
  for (int r = 1; r < n; ++r) CHECK(results[r] == results[0]);
}

// The ring's order of additions, written out on the host: chunk c starts as rank c's values and
// each rank c+k, k = 1..n-1, adds its own to the running sum; avg then divides the owner's sum by
// n. Pins the local ring all-reduce's results bit for bit, whatever its code looks like.
TEST_CASE("local ring all_reduce adds in ring order, bit for bit", "[comm]") {
  const int64_t count = 1001;
  for (int n : {2, 3, 4})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
      CAPTURE(n, name(op));
      std::vector<std::vector<float>> inputs;
      for (int r = 0; r < n; ++r) {
        Generator generator(99 + static_cast<uint64_t>(r));
        inputs.push_back(randn({count}, {}, &generator).to_vector<float>());
      }
      std::vector<float> want(static_cast<size_t>(count));
      for (int c = 0; c < n; ++c) {
        const ring::Range range = ring::chunk(count, n, c);
        for (int64_t i = range.begin; i < range.end; ++i) {
          float sum = inputs[static_cast<size_t>(c)][static_cast<size_t>(i)];
          for (int k = 1; k < n; ++k) sum = inputs[static_cast<size_t>((c + k) % n)][static_cast<size_t>(i)] + sum;
          want[static_cast<size_t>(i)] = op == ReduceOp::avg ? sum / static_cast<float>(n) : sum;
        }
      }
      Group group = make_group(n, LocalAlgorithm::ring);
      auto results = on_each_rank(group, [&](Communicator& comm) {
        Tensor t = from_vector(inputs[static_cast<size_t>(comm.rank())], {count}, {.device = comm.device()});
        comm.all_reduce(t, op);
        return t.to_vector<float>();
      });
      for (int r = 0; r < n; ++r) CHECK(results[r] == want);
    }
}

TEST_CASE("local communicators count the bytes each rank sends", "[comm]") {
  for (int n = 1; n <= 4; ++n) {
    for (int64_t count : {int64_t{1}, int64_t{7}, int64_t{1001}, int64_t{1200}}) {
      const int64_t bytes = count * 4;
      CAPTURE(n, count);
      Group ring_group = make_group(n, LocalAlgorithm::ring);
      auto ring_stats = on_each_rank(ring_group, [&](Communicator& comm) {
        comm.all_reduce(zeros({count}, {.device = comm.device()}));
        return comm.stats();
      });
      int64_t total = 0;
      for (int r = 0; r < n; ++r) {
        CHECK(ring_stats[r].calls == 1);
        CHECK(ring_stats[r].bytes_sent == ring::all_reduce_bytes_sent(count, 4, n, r));
        if (count % n == 0) CHECK(ring_stats[r].bytes_sent == 2 * (n - 1) * bytes / n);
        total += ring_stats[r].bytes_sent;
      }
      CHECK(total == 2 * (n - 1) * bytes);  // every chunk crosses n-1 links, twice

      // Naive: every other rank sends its tensor to rank 0, which sends the sum to each of them.
      Group naive_group = make_group(n, LocalAlgorithm::naive);
      auto naive_stats =
          on_each_rank(naive_group, [&](Communicator& comm) { return test::collective_stats(comm, count); });
      for (int r = 0; r < n; ++r) {
        CHECK(naive_stats[r][0].bytes_sent == (r == 0 ? (n - 1) * bytes : (n > 1 ? bytes : 0)));
        int64_t broadcast = r == n - 1 ? (n - 1) * bytes : 0;
        CHECK(naive_stats[r][1].bytes_sent == broadcast + (n - 1) * bytes);
        CHECK(naive_stats[r][1].calls == 3);
      }
    }
  }
}

TEST_CASE("local collectives write parameters in place and bump their version", "[comm]") {
  Group group = make_group(2, LocalAlgorithm::ring);
  auto results = on_each_rank(group, [&](Communicator& comm) {
    Tensor w = full({2, 3}, comm.rank() + 1.0, {.device = comm.device(), .requires_grad = true});
    uint64_t before = w.version();
    comm.broadcast(w, 0);
    return std::pair{w, w.version() - before};
  });
  CHECK(results[0].first.to_vector<float>() == std::vector<float>(6, 1.0f));
  CHECK(results[1].first.to_vector<float>() == std::vector<float>(6, 1.0f));
  CHECK(results[1].first.requires_grad());
  CHECK(results[0].second == 0);  // the root's data did not change
  CHECK(results[1].second == 1);
}

TEST_CASE("local collective times out naming the ranks that never arrived", "[comm]") {
  using namespace std::chrono_literals;
  for (LocalAlgorithm algorithm : kAlgorithms)
    for (int n : {2, 3}) {
      CAPTURE(algorithm_name(algorithm), n);
      Group group = make_group(n, algorithm, 200ms);
      const int absent = n - 1;
      auto start = std::chrono::steady_clock::now();
      auto messages = on_each_rank(group, [&](Communicator& comm) -> std::string {
        if (comm.rank() == absent) return "";
        try {
          comm.all_reduce(ones({7}, {.device = comm.device()}));
        } catch (const Error& e) {
          return e.what();
        }
        return "no error";
      });
      auto elapsed = std::chrono::steady_clock::now() - start;
      CHECK(elapsed < 5s);
      for (int r = 0; r < absent; ++r) {
        CAPTURE(r);
        const std::string& m = messages[r];
        CHECK_THAT(m, Catch::Contains("all_reduce(f32[7], sum) on rank " + std::to_string(r)));
        CHECK_THAT(m, Catch::Contains("timed out after 200 ms"));
        CHECK_THAT(m, Catch::Contains("rank " + std::to_string(absent) + " never arrived"));
      }
      // The group has failed: later collectives fail at once instead of waiting again.
      CHECK_THROWS_WITH(group[0]->all_reduce(ones({7}, {.device = cpu(0)})), Catch::Contains("aborted"));
    }
}

TEST_CASE("local collectives that differ between ranks fail at once", "[comm]") {
  using namespace std::chrono_literals;
  Group group = make_group(2, LocalAlgorithm::ring, 60s);
  auto start = std::chrono::steady_clock::now();
  auto messages = on_each_rank(group, [&](Communicator& comm) -> std::string {
    Tensor t = ones({7}, {.device = comm.device()});
    try {
      if (comm.rank() == 0) comm.all_reduce(t);
      else comm.broadcast(t, 0);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  });
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  for (const std::string& m : messages) CHECK_THAT(m, Catch::Contains("instead"));
  CHECK_THAT(messages[0], Catch::Contains("rank 1 called broadcast(f32[7], root 0)") ||
                              Catch::Contains("rank 0 called all_reduce(f32[7], sum)"));
}

TEST_CASE("local collective fails at once when a rank's communicator is gone", "[comm]") {
  Group group = make_group(2, LocalAlgorithm::naive);
  group[1].reset();
  CHECK_THROWS_WITH(group[0]->all_reduce(ones({3}, {.device = cpu(0)})),
                    Catch::Contains("rank 1's communicator was destroyed"));
}

TEST_CASE("local communicators check their arguments", "[comm]") {
  Group group = make_group(2, LocalAlgorithm::ring);
  Communicator& comm = *group[0];
  CHECK(comm.rank() == 0);
  CHECK(comm.world_size() == 2);
  CHECK(comm.device() == cpu(0));
  CHECK(comm.name() == "local-ring");
  CHECK(make_group(1, LocalAlgorithm::naive)[0]->name() == "local-naive");
  CHECK_THROWS_WITH(comm.all_reduce(ones({3}, {.device = cpu(1)})), Catch::Contains("not on the rank's device cpu:0"));
  CHECK_THROWS_WITH(comm.all_reduce(ones({3, 4}).t()), Catch::Contains("not contiguous"));
  CHECK_THROWS_WITH(comm.broadcast(ones({3}), 2), Catch::Contains("root 2 is out of range"));
  CHECK_THROWS_WITH(comm.all_reduce(ones({3}, {.dtype = DType::i64}), ReduceOp::avg),
                    Catch::Contains("avg needs a floating tensor"));
  CHECK_THROWS_WITH(make_local_group({cpu(0), cpu(0)}), Catch::Contains("more than once"));
}

TEST_CASE("make_mpi_communicator says so in a build without MPI", "[comm]") {
  // With MPI the communicator is tested under mpirun (tests/mpi); initialising MPI here would
  // make this process a singleton MPI job.
  if (mpi_is_built()) return;
  CHECK_THROWS_WITH(make_mpi_communicator(), Catch::Contains("built without MPI"));
}
