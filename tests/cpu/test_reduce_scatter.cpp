// Reduce-scatter and all-gather into a buffer on the local communicators (ring and naive), over
// logical CPU devices: against closed-form results (tests/comm_fixtures.h), against sums
// computed on the host, their byte counts, their argument checks, and the ring's all-reduce as
// the two of them in a row.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "comm_fixtures.h"
#include "duet/autograd/factory.h"
#include "duet/parallel/comm/local_communicator.h"
#include "duet/parallel/comm/ring.h"
#include "strategy_fixtures.h"

using namespace duet;
using namespace duet::parallel;
using Catch::Matchers::Contains;
using test::expected_chunk;
using test::Group;
using test::on_each_rank;

namespace {

Group make_group(int n, LocalAlgorithm algorithm) { return make_local_group(test::cpus(n), algorithm); }

const LocalAlgorithm kAlgorithms[] = {LocalAlgorithm::ring, LocalAlgorithm::naive};
const char* algorithm_name(LocalAlgorithm a) { return a == LocalAlgorithm::ring ? "ring" : "naive"; }

// Elements per chunk: none, one, a few, and more than a cache line's worth.
const std::vector<int64_t> kChunkSizes = {0, 1, 7, 1001};

template <class T> void check_reduce_scatter(LocalAlgorithm algorithm, int n, std::vector<ReduceOp> ops) {
  Group group = make_group(n, algorithm);
  for (ReduceOp op : ops) {
    auto results = test::reduce_scatter_each_size<T>(group, op, kChunkSizes);
    for (int r = 0; r < n; ++r)
      for (size_t k = 0; k < kChunkSizes.size(); ++k) {
        const int64_t m = kChunkSizes[k];
        CAPTURE(algorithm_name(algorithm), n, r, name(op), m, dtype_name(dtype_of<T>()));
        const Tensor& out = results[r][2 * k];
        CHECK(out.device() == cpu(r));
        CHECK(out.to_vector<T>() == expected_chunk<T>(m, r, test::reduced_factor(op, n)));
        const Tensor& in = results[r][2 * k + 1];
        CHECK(in.to_vector<T>() == test::expected<T>(n * m, r + 1));  // left unchanged
      }
  }
}

// Random f32 inputs, one per rank, of n * m elements.
std::vector<std::vector<float>> random_inputs(int n, int64_t m) {
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < n; ++r) {
    Generator generator(7 + static_cast<uint64_t>(r));
    inputs.push_back(randn({n * m}, {}, &generator).to_vector<float>());
  }
  return inputs;
}

// Every rank's reduce_scatter output of its random input (sum).
std::vector<std::vector<float>> reduce_scatter_random(LocalAlgorithm algorithm, int n, int64_t m,
                                                      const std::vector<std::vector<float>>& inputs) {
  Group group = make_group(n, algorithm);
  return on_each_rank(group, [&](Communicator& comm) {
    Tensor in = from_vector(inputs[static_cast<size_t>(comm.rank())], {n * m}, {.device = comm.device()});
    Tensor out = empty({m}, {.device = comm.device()});
    comm.reduce_scatter(in, out);
    return out.to_vector<float>();
  });
}

}  // namespace

TEST_CASE("local reduce_scatter sums and averages each rank's chunk", "[comm][reduce_scatter]") {
  for (LocalAlgorithm algorithm : kAlgorithms)
    for (int n = 1; n <= 4; ++n) {
      check_reduce_scatter<float>(algorithm, n, {ReduceOp::sum, ReduceOp::avg});
      check_reduce_scatter<double>(algorithm, n, {ReduceOp::sum, ReduceOp::avg});
      check_reduce_scatter<int64_t>(algorithm, n, {ReduceOp::sum});
    }
}

TEST_CASE("local reduce_scatter of random values matches a sum on the host", "[comm][reduce_scatter]") {
  const int64_t m = 333;
  for (LocalAlgorithm algorithm : kAlgorithms)
    for (int n = 2; n <= 4; ++n) {
      const auto inputs = random_inputs(n, m);
      const auto results = reduce_scatter_random(algorithm, n, m, inputs);
      for (int r = 0; r < n; ++r) {
        CAPTURE(algorithm_name(algorithm), n, r);
        REQUIRE(results[r].size() == static_cast<size_t>(m));
        int far = 0;
        for (int64_t j = 0; j < m; ++j) {
          double sum = 0;
          for (int q = 0; q < n; ++q) sum += inputs[static_cast<size_t>(q)][static_cast<size_t>(r * m + j)];
          // n - 1 float additions of values of magnitude ~1: a few ulps of the largest partial sum.
          if (std::abs(results[r][static_cast<size_t>(j)] - sum) > 1e-5 * (1 + std::abs(sum))) ++far;
        }
        CHECK(far == 0);
      }
    }
}

// The ring's order, written out: chunk c's sum starts from rank c+1's values, and each next rank
// adds its own to the running sum, ending on rank c. The naive one adds in rank order on rank 0.
TEST_CASE("local reduce_scatter adds in the order of its algorithm, bit for bit", "[comm][reduce_scatter]") {
  const int64_t m = 257;
  for (LocalAlgorithm algorithm : kAlgorithms)
    for (int n = 2; n <= 4; ++n) {
      CAPTURE(algorithm_name(algorithm), n);
      const auto inputs = random_inputs(n, m);
      const auto results = reduce_scatter_random(algorithm, n, m, inputs);
      for (int c = 0; c < n; ++c) {
        std::vector<float> want(static_cast<size_t>(m));
        for (int64_t j = 0; j < m; ++j) {
          auto value = [&](int q) { return inputs[static_cast<size_t>(q % n)][static_cast<size_t>(c * m + j)]; };
          float sum = algorithm == LocalAlgorithm::ring ? value(c + 1) : value(0);
          for (int k = 2; k <= n; ++k)
            sum = algorithm == LocalAlgorithm::ring ? value(c + k) + sum : sum + value(k - 1);
          want[static_cast<size_t>(j)] = sum;
        }
        CHECK(results[c] == want);
      }
    }
}

TEST_CASE("local all_gather_into fills every rank's chunk, in place or not", "[comm][reduce_scatter]") {
  for (LocalAlgorithm algorithm : kAlgorithms)
    for (int n = 1; n <= 4; ++n)
      for (bool in_place : {false, true}) {
        Group group = make_group(n, algorithm);
        auto results = test::all_gather_into_each_size<double>(group, kChunkSizes, in_place);
        auto integers = test::all_gather_into_each_size<int64_t>(group, {5}, in_place);
        for (int r = 0; r < n; ++r) {
          for (size_t k = 0; k < kChunkSizes.size(); ++k) {
            CAPTURE(algorithm_name(algorithm), n, in_place, r, kChunkSizes[k]);
            CHECK(results[r][k].to_vector<double>() == test::gathered<double>(n, kChunkSizes[k]));
          }
          CHECK(integers[r][0].to_vector<int64_t>() == test::gathered<int64_t>(n, 5));
        }
      }
}

// What a sharded optimizer does with a gradient: reduce-scatter it, then all-gather the chunks
// back into place, and every rank holds the all-reduced tensor.
TEST_CASE("local reduce_scatter then all_gather_into in place is an all_reduce", "[comm][reduce_scatter]") {
  for (LocalAlgorithm algorithm : kAlgorithms)
    for (int n = 1; n <= 4; ++n) {
      const int64_t m = 7;
      Group group = make_group(n, algorithm);
      auto results = on_each_rank(group, [&](Communicator& comm) {
        const int r = comm.rank();
        Tensor gradient = test::rank_tensor<float>(comm, {n * m}, r);
        Tensor reduced = zeros({n * m}, {.device = comm.device()});
        Tensor own_chunk = reduced.as_strided({m}, {1}, r * m);
        comm.reduce_scatter(gradient, own_chunk, ReduceOp::avg);
        const uint64_t before = reduced.version();
        comm.all_gather_into(own_chunk, reduced);
        comm.all_reduce(gradient, ReduceOp::avg);
        return std::vector<Tensor>{reduced, gradient, full({}, static_cast<double>(reduced.version() - before))};
      });
      for (int r = 0; r < n; ++r) {
        CAPTURE(algorithm_name(algorithm), n, r);
        CHECK(results[r][0].to_vector<float>() == test::expected<float>(n * m, test::reduced_factor(ReduceOp::avg, n)));
        CHECK(results[r][0].to_vector<float>() == results[r][1].to_vector<float>());
        CHECK(results[r][2].item<float>() == 1);  // the all-gather bumped the output's version once
      }
    }
}

TEST_CASE("local async reduce-scatters and all-gathers complete in order", "[comm][reduce_scatter]") {
  for (LocalAlgorithm algorithm : kAlgorithms) {
    const int n = 3;
    Group group = make_group(n, algorithm);
    auto results = on_each_rank(group, [](Communicator& comm) { return test::reduce_scatters_in_flight(comm); });
    for (int r = 0; r < n; ++r) {
      CAPTURE(algorithm_name(algorithm), r);
      REQUIRE(results[r].size() == 6);
      for (int k = 0; k < 4; ++k) {
        const ReduceOp op = k % 2 ? ReduceOp::avg : ReduceOp::sum;
        CHECK(results[r][static_cast<size_t>(k)].to_vector<float>() ==
              expected_chunk<float>(3 + k, r, test::reduced_factor(op, n)));
      }
      CHECK(results[r][4].to_vector<float>() == test::expected<float>(5, test::reduced_factor(ReduceOp::sum, n)));
      CHECK(results[r][5].to_vector<float>() == test::gathered<float>(n, 4));
    }
  }
}

TEST_CASE("local reduce_scatter and all_gather_into count (n-1)/n of the buffer", "[comm][reduce_scatter]") {
  for (int n = 1; n <= 4; ++n)
    for (int64_t m : {int64_t{1}, int64_t{7}, int64_t{250}}) {
      const int64_t chunk_bytes = m * 4;
      Group ring_group = make_group(n, LocalAlgorithm::ring);
      auto ring_stats = on_each_rank(ring_group, [&](Communicator& comm) { return test::collective_stats(comm, m); });
      Group naive_group = make_group(n, LocalAlgorithm::naive);
      auto naive_stats = on_each_rank(naive_group, [&](Communicator& comm) { return test::collective_stats(comm, m); });
      for (int r = 0; r < n; ++r) {
        CAPTURE(n, m, r);
        // Ring: n-1 steps of one chunk, in either collective.
        CHECK(ring_stats[r][2].calls == 1);
        CHECK(ring_stats[r][2].bytes_sent == (n - 1) * chunk_bytes);
        CHECK(ring_stats[r][2].bytes_sent == ring::reduce_scatter_bytes_sent(n * m, 4, n, r));
        CHECK(ring_stats[r][3].bytes_sent == (n - 1) * chunk_bytes);
        // Naive: every other rank sends its whole input to rank 0, which hands each of them a chunk.
        CHECK(naive_stats[r][2].bytes_sent == (r == 0 ? (n - 1) * chunk_bytes : n * chunk_bytes));
        CHECK(naive_stats[r][3].bytes_sent == (n - 1) * chunk_bytes);
      }
    }
}

TEST_CASE("reduce_scatter and all_gather_into check their arguments", "[comm][reduce_scatter]") {
  Group group = make_group(2, LocalAlgorithm::ring);
  Communicator& comm = *group[0];
  const Tensor in = ones({6}), out = zeros({3});
  CHECK_THROWS_WITH(comm.reduce_scatter(ones({7}), out),
                    Contains("input f32[7] on cpu:0 must hold world size (2) times the output's 3 elements, 6") &&
                        Contains("the caller's to pad"));
  CHECK_THROWS_WITH(comm.reduce_scatter(in, zeros({3}, {.dtype = DType::f64})),
                    Contains("input f32[6] on cpu:0 and output f64[3] on cpu:0 differ in dtype"));
  CHECK_THROWS_WITH(comm.reduce_scatter(in, zeros({3}, {.device = cpu(1)})),
                    Contains("reduce_scatter on rank 0: tensor f32[3] on cpu:1 is not on the rank's device cpu:0"));
  CHECK_THROWS_WITH(comm.reduce_scatter(ones({3, 2}).t(), out), Contains("not contiguous"));
  CHECK_THROWS_WITH(comm.reduce_scatter(in, in.as_strided({3}, {1}, 0)), Contains("out of place"));
  CHECK_THROWS_WITH(
      comm.reduce_scatter(ones({6}, {.dtype = DType::i64}), zeros({3}, {.dtype = DType::i64}), ReduceOp::avg),
      Contains("avg needs a floating tensor"));
  CHECK_THROWS_WITH(comm.all_gather_into(ones({3}), zeros({7})),
                    Contains("output f32[7] on cpu:0 must hold world size (2) times the input's 3 elements, 6"));
  // In place means the rank's own chunk: rank 0's is elements 0..2, not 3..5 nor 1..3.
  const Tensor buffer = zeros({2, 3});
  for (int64_t offset : {3, 1})
    CHECK_THROWS_WITH(comm.all_gather_into(buffer.as_strided({3}, {1}, offset), buffer),
                      Contains("overlaps output f32[2, 3] on cpu:0 other than as the output's own chunk (rank 0's"));
  CHECK(comm.stats().calls == 0);  // nothing was issued
}

TEST_CASE("a reduce_scatter that another rank issues as all_reduce fails at once", "[comm][reduce_scatter]") {
  Group group = make_group(2, LocalAlgorithm::ring);
  auto messages = on_each_rank(group, [&](Communicator& comm) -> std::string {
    try {
      if (comm.rank() == 0)
        comm.reduce_scatter(ones({8}, {.device = comm.device()}), zeros({4}, {.device = comm.device()}));
      else comm.all_reduce(ones({8}, {.device = comm.device()}));
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  });
  for (const std::string& m : messages) CHECK_THAT(m, Contains("instead"));
  CHECK_THAT(messages[0], Contains("reduce_scatter(f32[8], sum)") || Contains("all_reduce(f32[8], sum)"));
}
