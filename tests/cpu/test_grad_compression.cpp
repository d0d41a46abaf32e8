// Gradient compression (parallel/comm/grad_compression.h): the 16-bit casts, the compressed
// all-reduce of the local communicators against a sum computed on the host, its halved bytes,
// and ddp's per-step check, which must pass with compression and fail without it.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "comm_fixtures.h"
#include "duet/autograd/factory.h"
#include "duet/parallel/comm/grad_compression.h"
#include "duet/parallel/comm/local_communicator.h"
#include "duet/parallel/lab/cost_model.h"
#include "duet/parallel/lab/step_check.h"
#include "strategy_fixtures.h"

using namespace duet;
using namespace duet::parallel;
using Catch::Matchers::Contains;

namespace {

constexpr GradCompression fp16 = GradCompression::fp16;
constexpr GradCompression bf16 = GradCompression::bf16;
constexpr float kInf = std::numeric_limits<float>::infinity();

float with_bits(uint32_t bits) { return std::bit_cast<float>(bits); }

// Random values of all magnitudes: normal ones around 1, large, tiny, and exact zeros.
std::vector<float> rank_values(int rank, int64_t count) {
  Generator generator(40 + static_cast<uint64_t>(rank));
  std::vector<float> values = randn({count}, {}, &generator).to_vector<float>();
  for (size_t i = 0; i < values.size(); ++i) {
    if (i % 5 == 1) values[i] *= 3000.0f;
    if (i % 5 == 2) values[i] *= 1e-6f;
    if (i % 11 == 3) values[i] = 0.0f;
  }
  return values;
}

// The compressed all-reduce's contract, on the host: every rank's values rounded, summed in f32
// in rank order (avg: divided by n), and rounded again.
std::vector<float> expected_compressed(int n, int64_t count, GradCompression format, ReduceOp op) {
  std::vector<float> sum;
  for (int r = 0; r < n; ++r) {
    std::vector<float> values = rank_values(r, count);
    for (size_t i = 0; i < values.size(); ++i) {
      const float v = round_to_wire(values[i], format);
      if (r == 0) values[i] = v;
      else sum[i] += v;
    }
    if (r == 0) sum = values;
  }
  for (float& v : sum) v = round_to_wire(op == ReduceOp::avg ? v / static_cast<float>(n) : v, format);
  return sum;
}

}  // namespace

TEST_CASE("fp16 casts round to nearest even, overflow to inf and keep subnormals", "[grad-compression]") {
  CHECK(encode_value(1.0f, fp16) == 0x3c00);
  CHECK(encode_value(-2.0f, fp16) == 0xc000);
  CHECK(encode_value(-0.0f, fp16) == 0x8000);
  CHECK(encode_value(1.0f + 0x1p-11f, fp16) == 0x3c00);             // a tie: to the even 1.0
  CHECK(encode_value(1.0f + 3 * 0x1p-11f, fp16) == 0x3c02);         // a tie: to the even 1 + 2^-9
  CHECK(encode_value(1.0f + 0x1p-11f + 0x1p-20f, fp16) == 0x3c01);  // past the tie: up
  CHECK(encode_value(65504.0f, fp16) == 0x7bff);                    // the largest
  CHECK(encode_value(65519.0f, fp16) == 0x7bff);
  CHECK(encode_value(65520.0f, fp16) == 0x7c00);  // half a step above it: a tie, to the even inf
  CHECK(encode_value(-1e10f, fp16) == 0xfc00);
  CHECK(encode_value(kInf, fp16) == 0x7c00);
  CHECK(encode_value(0x1p-14f, fp16) == 0x0400);             // the smallest normal
  CHECK(encode_value(0x1p-14f - 0x1p-25f, fp16) == 0x0400);  // a tie between 0x3ff and 0x400
  CHECK(encode_value(0x1p-24f, fp16) == 0x0001);             // the smallest subnormal
  CHECK(encode_value(0x1p-25f, fp16) == 0x0000);             // a tie: to the even 0
  CHECK(encode_value(1.5f * 0x1p-25f, fp16) == 0x0001);
  CHECK(encode_value(3 * 0x1p-25f, fp16) == 0x0002);   // a tie: to the even 2
  CHECK(encode_value(-5 * 0x1p-25f, fp16) == 0x8002);  // a tie: to the even -2
  CHECK(encode_value(1e-30f, fp16) == 0x0000);
  CHECK(encode_value(std::nanf(""), fp16) == 0x7e00);
  CHECK(encode_value(-std::nanf(""), fp16) == 0xfe00);
  CHECK(decode_value(0x0001, fp16) == 0x1p-24f);
  CHECK(decode_value(0x83ff, fp16) == -1023 * 0x1p-24f);
  CHECK(decode_value(0x3555, fp16) == 0.333251953125f);
  CHECK(decode_value(0xfc00, fp16) == -kInf);
  CHECK(std::isnan(decode_value(0x7e00, fp16)));
  // Every code but NaN's comes back from its own value.
  for (uint32_t code = 0; code <= 0xffff; ++code) {
    const float v = decode_value(static_cast<uint16_t>(code), fp16);
    if (!std::isnan(v) && encode_value(v, fp16) != code) FAIL("fp16 code " << code << " -> " << v);
  }
}

TEST_CASE("bf16 casts round to nearest even with f32's range", "[grad-compression]") {
  CHECK(encode_value(1.0f, bf16) == 0x3f80);
  CHECK(encode_value(1.0f + 0x1p-8f, bf16) == 0x3f80);                     // a tie: to the even 1.0
  CHECK(encode_value(1.0f + 3 * 0x1p-8f, bf16) == 0x3f82);                 // a tie: to the even 1 + 2^-6
  CHECK(encode_value(1.0f + 0x1p-8f + 0x1p-20f, bf16) == 0x3f81);          // past the tie: up
  CHECK(encode_value(std::numeric_limits<float>::max(), bf16) == 0x7f80);  // rounds up to inf
  CHECK(encode_value(-kInf, bf16) == 0xff80);
  CHECK(encode_value(-0.0f, bf16) == 0x8000);
  CHECK(encode_value(with_bits(0x00018000u), bf16) == 0x0002);  // a subnormal tie: to even
  CHECK(encode_value(with_bits(0x00008000u), bf16) == 0x0000);
  CHECK(encode_value(std::nanf(""), bf16) == 0x7fc0);
  CHECK(decode_value(0x4049, bf16) == 3.140625f);
  CHECK(std::isnan(decode_value(0xffc1, bf16)));
  for (uint32_t code = 0; code <= 0xffff; ++code) {
    const float v = decode_value(static_cast<uint16_t>(code), bf16);
    if (!std::isnan(v) && encode_value(v, bf16) != code) FAIL("bf16 code " << code << " -> " << v);
  }
  CHECK(parse_grad_compression("bf16") == bf16);
  CHECK_THROWS_WITH(parse_grad_compression("fp8"),
                    Contains("unknown gradient compression 'fp8': expected none, fp16 or bf16"));
}

TEST_CASE("the compressed all-reduce on 2 and 3 local ranks sums the rounded values in rank order",
          "[grad-compression][communicators]") {
  struct Result {
    std::vector<float> compressed, plain;
    int64_t compressed_bytes = 0, plain_bytes = 0;
  };
  for (LocalAlgorithm algorithm : {LocalAlgorithm::ring, LocalAlgorithm::naive}) {
    for (int n : {2, 3}) {
      test::Group group = make_local_group(test::cpus(n), algorithm);
      for (GradCompression format : {fp16, bf16}) {
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
          for (int64_t count : {int64_t{2}, int64_t{1001}}) {  // 2: a rank of 3 owns no chunk
            CAPTURE(group[0]->name(), n, name(format), name(op), count);
            auto results = test::on_each_rank(group, [&](Communicator& comm) {
              Result result;
              auto reduce = [&](bool compressed, std::vector<float>& values, int64_t& bytes) {
                Tensor t = from_vector(rank_values(comm.rank(), count), {count}, {.device = comm.device()});
                comm.reset_stats();
                if (compressed) comm.all_reduce_compressed(t, format, op);
                else comm.all_reduce(t, op);
                bytes = comm.stats().bytes_sent;
                values = t.to_vector<float>();
              };
              reduce(true, result.compressed, result.compressed_bytes);
              reduce(false, result.plain, result.plain_bytes);
              return result;
            });
            const std::vector<float> want = expected_compressed(n, count, format, op);
            int64_t compressed_bytes = 0, plain_bytes = 0;
            for (const Result& r : results) {
              CHECK(r.compressed == want);  // bit for bit, and the same on every rank
              CHECK(r.plain != want);       // the compression did round
              compressed_bytes += r.compressed_bytes;
              plain_bytes += r.plain_bytes;
            }
            CHECK(compressed_bytes > 0);
            CHECK(2 * compressed_bytes == plain_bytes);  // half the bytes on the wire
          }
        }
      }
    }
  }
}

TEST_CASE("a compressed all-reduce refuses what it cannot cast", "[grad-compression][communicators]") {
  test::Group group = make_local_group(test::cpus(1), LocalAlgorithm::ring);
  Tensor f64 = zeros({3}, {.dtype = DType::f64});
  CHECK_THROWS_WITH(group[0]->all_reduce_compressed(f64, bf16), Contains("bf16 compression casts f32 values"));
  // One rank: the values still come back rounded, as the hook casts them whatever the world.
  Tensor t = from_vector(std::vector<float>{1.0f + 0x1p-8f + 0x1p-20f}, {1});
  group[0]->all_reduce_compressed(t, bf16);
  CHECK(t.to_vector<float>()[0] == 1.0f + 0x1p-7f);
}

namespace {

// The worst per-step check over the first `steps` of five batches (unequal shards, and on 3
// devices a rank without examples) of ddp with `run` compression on n ranks, checked as if it
// had `checked`.
double worst_check_ulps(int n, GradCompression run, GradCompression checked, size_t steps,
                        LocalAlgorithm algorithm = LocalAlgorithm::ring) {
  DDPOptions options = test::tiny_buckets();  // several buckets
  options.grad_compression = run;
  options.algorithm = algorithm;
  DistributedDataParallel ddp(test::fresh("lenet-relu"), test::sgd, test::cpus(n), options);
  StepCheck check(test::fresh("lenet-relu", cpu(n)), test::sgd, cpu(n), {}, {.format = checked, .ranks = n});
  const std::vector<data::Batch> batches = test::five_batches();
  double worst = 0;
  for (size_t i = 0; i < steps; ++i) {
    check.before(ddp, batches[i]);
    ddp.train_step(batches[i]);
    worst = std::max(worst, check.after(ddp));
  }
  return worst;
}

}  // namespace

TEST_CASE("ddp's per-step check reproduces the compression, and fails without it", "[grad-compression][ddp]") {
  CHECK(worst_check_ulps(2, fp16, fp16, 5) <= 8);
  CHECK(worst_check_ulps(3, bf16, bf16, 5) <= 8);
  CHECK(worst_check_ulps(3, fp16, fp16, 5, LocalAlgorithm::naive) <= 8);
  // A run that skipped the compression, or rounded to the other format, lands far away.
  CHECK(worst_check_ulps(2, GradCompression::none, bf16, 1) > 64);
  CHECK(worst_check_ulps(2, GradCompression::none, fp16, 1) > 64);
  CHECK(worst_check_ulps(2, bf16, fp16, 1) > 64);
}

TEST_CASE("ddp refuses gradient compression where nothing compresses", "[grad-compression][ddp]") {
  DDPOptions options;
  options.grad_compression = bf16;
  options.reduce_through_first_device = true;
  options.bucketed = false;
  CHECK_THROWS_WITH(DistributedDataParallel(test::fresh("mlp"), test::sgd, test::cpus(2), options),
                    Contains("the all-reduce through the first device has no gradient compression"));
}

TEST_CASE("the cost model prices compressed gradients at half their bytes", "[grad-compression][experiment]") {
  const Link link{"test", 1, 1};
  StepProfile compressed;
  compressed.backward_ms = 0.004;  // too short to hide any bucket
  compressed.parameter_bytes = 1000000;
  compressed.bucket_bytes = {200000, 800000};
  compressed.parameter_count = 4;
  StepProfile half = compressed;  // the same gradients at half the bytes, uncompressed
  half.parameter_bytes = 500000;
  half.bucket_bytes = {100000, 400000};
  StepProfile plain = compressed;
  compressed.gradient_wire_factor = 0.5;
  for (StrategyKind kind : {StrategyKind::ddp, StrategyKind::ddp_naive, StrategyKind::ddp_unbucketed}) {
    CAPTURE(kind);
    CHECK(predict(kind, 4, link, compressed).comm_ms == Approx(predict(kind, 4, link, half).comm_ms));
    CHECK(predict(kind, 4, link, compressed).comm_ms < predict(kind, 4, link, plain).comm_ms);
  }
}
