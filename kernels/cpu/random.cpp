// uniform() and normal(): Philox draws, element i from stream position i (core/philox.h), so
// the numbers do not depend on the thread split. uniform matches the CUDA kernel bit for bit;
// normal's log and cos are each side's own library, so the two agree closely, not bit for bit.
#include "duet/core/philox.h"
#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/thread_pool.h"

namespace duet::kernels::cpu {
namespace {

// Philox costs ~10 rounds per block of 4 numbers: worth threading in small chunks.
constexpr int64_t kRandomGrain = 4096;

// Calls write(data, i) for every element of a contiguous floating `out`, in parallel.
template <class Write> void draw(const char* op, const Tensor& out, Write write) {
  DUET_CHECK(out.is_contiguous(), op, ": expected a contiguous output, got ", out.describe(), " with strides ",
             shape_str(out.strides()));
  dispatch_floating(out.dtype(), op, [&]<class T>() {
    T* data = out.data<T>();
    parallel_for(out.numel(), kRandomGrain, [&](int64_t begin, int64_t end) { write(data, begin, end); });
  });
}

}  // namespace

void uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high) {
  const double scale = high - low;
  draw("uniform", out, [&]<class T>(T* data, int64_t begin, int64_t end) {
    auto value = [&](uint32_t bits) { return static_cast<T>(low + scale * philox::uniform(bits)); };
    // Block `offset` + j holds elements 4j..4j+3: the numbers of philox::bits(seed, offset, i).
    int64_t i = begin;
    for (; i < end && i % 4 != 0; ++i) data[i] = value(philox::bits(seed, offset, static_cast<uint64_t>(i)));
    for (; i + 4 <= end; i += 4) {
      philox::Block block = philox::generate(seed, offset + static_cast<uint64_t>(i) / 4);
      for (int lane = 0; lane < 4; ++lane) data[i + lane] = value(block.v[lane]);
    }
    for (; i < end; ++i) data[i] = value(philox::bits(seed, offset, static_cast<uint64_t>(i)));
  });
}

void normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double stddev) {
  draw("normal", out, [&]<class T>(T* data, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      data[i] = static_cast<T>(philox::normal(seed, offset, static_cast<uint64_t>(i)) * stddev + mean);
  });
}

}  // namespace duet::kernels::cpu
