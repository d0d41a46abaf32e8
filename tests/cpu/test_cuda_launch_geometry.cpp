// The CUDA reductions' launch geometry (kernels/cuda/launch_geometry.h), tested here without a GPU:
// the kernels' own tests compare results, which one block would give as well, so whether a check
// or a batch norm really spreads over many blocks is checked on these numbers. The cross-entropy
// target check and duet's batch norm used to run one block for all targets and one per channel.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "duet/kernels/cuda/launch_geometry.h"

using namespace duet::cuda;

TEST_CASE("cross-entropy's target check uses more blocks for more targets, up to 256", "[launch_geometry]") {
  CHECK(target_check_blocks(0) == 1);
  CHECK(target_check_blocks(1) == 1);
  CHECK(target_check_blocks(kMaxReduceThreads) == 1);
  CHECK(target_check_blocks(kMaxReduceThreads + 1) == 2);
  CHECK(target_check_blocks(100 * kMaxReduceThreads) == 100);
  CHECK(target_check_blocks(256 * kMaxReduceThreads) == 256);
  CHECK(target_check_blocks(300'000) == 256);
  CHECK(target_check_blocks(int64_t(1) << 40) == 256);
  // No block without targets of its own, and one thread per target up to the cap.
  for (int64_t n : {1, 255, 256, 257, 4096, 65'535, 65'537, 1'000'000}) {
    const int64_t blocks = target_check_blocks(n);
    CHECK((blocks - 1) * kMaxReduceThreads < n);
    CHECK((blocks == 256 || blocks * kMaxReduceThreads >= n));
  }
}

TEST_CASE("batch norm splits few channels of many values into slices until about 1024 blocks", "[launch_geometry]") {
  // A channel's slices, as batch_norm.cu's Slicing makes them: parts_per_output(channels, count).
  CHECK(parts_per_output(2, int64_t(1) << 20) == 256);  // 512 blocks: each slice 4096 values
  CHECK(parts_per_output(1, int64_t(1) << 24) == 1024);
  CHECK(parts_per_output(3, int64_t(1) << 24) == 342);  // ceil(1024 / 3)
  CHECK(parts_per_output(64, 32 * 32 * 256) == 16);     // a ResNet layer at batch 256: 1024 blocks
  // Enough channels to fill the GPU, or too few values to share: one block per channel.
  CHECK(parts_per_output(1024, int64_t(1) << 20) == 1);
  CHECK(parts_per_output(4096, int64_t(1) << 20) == 1);
  CHECK(parts_per_output(2, 8191) == 1);
  CHECK(parts_per_output(2, 8192) == 2);
  for (int64_t channels : {1, 2, 3, 7, 64, 500, 1023}) {
    for (int64_t count : {int64_t(8192), int64_t(100'000), int64_t(1) << 22}) {
      const int64_t slices = parts_per_output(channels, count);
      CHECK(slices >= 1);
      CHECK(count / slices >= 4096);                                    // every slice has at least 4096 values
      CHECK(channels * (slices - 1) < 1024);                            // no more slices than about 1024 blocks need
      if (count >= int64_t(1) << 22) CHECK(channels * slices >= 1024);  // and enough to get there
    }
  }
}

TEST_CASE("a reduction's slices cover its elements in order, their sizes differing by at most one",
          "[launch_geometry]") {
  for (int64_t count : {int64_t(1), int64_t(7), int64_t(8192), int64_t(100'003), int64_t(1) << 20}) {
    for (int64_t parts : {1, 2, 3, 256, 1024}) {
      if (parts > count) continue;
      CHECK(slice_begin(count, parts, 0) == 0);
      CHECK(slice_begin(count, parts, parts) == count);
      const int64_t small = count / parts;
      for (int64_t p = 0; p < parts; ++p) {
        const int64_t size = slice_begin(count, parts, p + 1) - slice_begin(count, parts, p);
        CHECK((size == small || size == small + 1));
      }
    }
  }
}

TEST_CASE("reduction blocks are powers of two from 32 to 256 covering the slice", "[launch_geometry]") {
  CHECK(reduce_threads_for(0) == 32);
  CHECK(reduce_threads_for(32) == 32);
  CHECK(reduce_threads_for(33) == 64);
  CHECK(reduce_threads_for(200) == 256);
  CHECK(reduce_threads_for(1'000'000) == kMaxReduceThreads);
}
