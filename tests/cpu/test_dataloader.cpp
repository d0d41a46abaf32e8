// DataLoader and samplers: batching, shuffling per (seed, epoch), drop_last, normalisation,
// prefetching, and the distributed sampler's partition.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "duet/data/dataloader.h"
#include "duet/duet.h"
#include "duet/kernels/cpu/thread_pool.h"
#include "duet/kernels/cuda/runtime.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {
// 10 one-pixel "images" whose value is 10 * index, labelled by index.
data::TensorDataset tiny() {
  std::vector<uint8_t> pixels;
  std::vector<int64_t> labels;
  for (int i = 0; i < 10; ++i) {
    pixels.push_back(static_cast<uint8_t>(10 * i));
    labels.push_back(i);
  }
  return {from_vector(pixels, {10, 1, 1, 1}), from_vector(labels, {10})};
}

std::vector<int64_t> epoch_labels(data::DataLoader& loader) {
  std::vector<int64_t> seen;
  for (auto& [x, y] : loader) {
    for (int64_t v : y.to_vector<int64_t>()) seen.push_back(v);
  }
  return seen;
}
}  // namespace

TEST_CASE("DataLoader batches in order, converts to f32/255, keeps the short last batch", "[data]") {
  data::DataLoader loader(tiny(), {.batch_size = 4});
  CHECK(loader.num_batches() == 3);
  std::vector<int64_t> sizes;
  for (auto& [x, y] : loader) {
    sizes.push_back(y.numel());
    CHECK(x.dtype() == DType::f32);
    CHECK(x.size(0) == y.numel());
    CHECK(x.to_vector<float>()[0] == Approx(10.0 * y.to_vector<int64_t>()[0] / 255.0));
  }
  CHECK(sizes == std::vector<int64_t>{4, 4, 2});
  CHECK(epoch_labels(loader) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("DataLoader: drop_last, normalisation and no-prefetch mode", "[data]") {
  data::DataLoader loader(
      tiny(), {.batch_size = 4, .drop_last = true, .normalize_mean = 0.5, .normalize_std = 0.25, .prefetch = 0});
  CHECK(loader.num_batches() == 2);
  std::vector<float> first;
  for (auto& [x, y] : loader) {
    if (first.empty()) first = x.to_vector<float>();
  }
  CHECK(first[1] == Approx((10.0 / 255.0 - 0.5) / 0.25));
  CHECK(epoch_labels(loader).size() == 8);
}

TEST_CASE("DataLoader normalises each value as (x * unit - mean) / std rounds it unfused, in every build", "[data]") {
  // dataloader.cpp is compiled without fused multiply-adds (CMakeLists.txt): with them, a build
  // with -march=native rounded one value in six here differently from a portable one. The
  // expected value's product goes through a volatile, so that this file is never fused either.
  std::vector<uint8_t> pixels;
  for (int i = 0; i < 6 * 37; ++i) pixels.push_back(static_cast<uint8_t>((7 * i + 3) % 256));
  const Tensor u8 = from_vector(pixels, {6, 37});
  const float shift = static_cast<float>(0.3), scale = static_cast<float>(1.0 / 0.7);
  for (const bool as_f32 : {false, true}) {
    CAPTURE(as_f32);
    const Tensor images = as_f32 ? u8.to(DType::f32) : u8;
    const float unit = as_f32 ? 1.0f : 1.0f / 255.0f;  // u8 images are scaled to [0, 1]
    data::DataLoader loader({images, from_vector(std::vector<int64_t>(6, 0), {6})},
                            {.batch_size = 6, .normalize_mean = 0.3, .normalize_std = 0.7});
    for (auto& [x, y] : loader) {
      const std::vector<float> got = x.to_vector<float>();
      REQUIRE(got.size() == pixels.size());
      for (size_t i = 0; i < pixels.size(); ++i) {
        CAPTURE(i);
        const volatile float product = static_cast<float>(pixels[i]) * unit;
        CHECK(got[i] == (product - shift) * scale);
      }
    }
  }
}

TEST_CASE("DataLoader's host batches, made in slices by its thread and the consumer, equal batches made whole",
          "[data]") {
  // 997 examples of 5 values in batches of 37: slices of 8 examples end mid-batch, and the
  // last batch is short. The loader's thread fills slices of the batches ahead while the
  // consumer fills the rest of the one it takes.
  std::vector<uint8_t> pixels;
  std::vector<int64_t> labels;
  for (int i = 0; i < 997 * 5; ++i) pixels.push_back(static_cast<uint8_t>((31 * i + 7) % 256));
  for (int i = 0; i < 997; ++i) labels.push_back(i);
  const data::TensorDataset set{from_vector(pixels, {997, 5}), from_vector(labels, {997})};
  const data::DataLoaderOptions options{
      .batch_size = 37, .shuffle = true, .seed = 5, .normalize_mean = 0.2, .normalize_std = 0.6};
  data::DataLoaderOptions inline_options = options;
  inline_options.prefetch = 0;
  data::DataLoader sliced(set, options), whole(set, inline_options);
  for (int epoch = 0; epoch < 3; ++epoch) {
    auto expected = whole.begin();
    int64_t batches = 0;
    for (auto& [x, y] : sliced) {
      REQUIRE(expected != whole.end());
      CHECK(y.to_vector<int64_t>() == expected->y.to_vector<int64_t>());
      CHECK(x.to_vector<float>() == expected->x.to_vector<float>());
      ++expected;
      if (epoch == 1 && ++batches == 5) break;  // the batches made ahead are dropped with the epoch
    }
    if (epoch != 1) CHECK(expected == whole.end());
  }
}

TEST_CASE("DataLoader makes its batches ahead on a thread of its own, while every pool thread is busy", "[data]") {
  std::vector<uint8_t> pixels(512 * 16);
  std::vector<int64_t> labels;
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i % 251);
  for (int i = 0; i < 512; ++i) labels.push_back(i);
  const data::TensorDataset set{from_vector(pixels, {512, 16}), from_vector(labels, {512})};
  data::DataLoader loader(set, {.batch_size = 8, .prefetch = 3});
  data::DataLoader whole(set, {.batch_size = 8, .prefetch = 0});
  const int saved = kernels::num_threads();
  kernels::set_num_threads(2);
  auto batch = loader.begin();  // batch 0 taken; 1 to 3 are the loader thread's to make
  const std::thread::id maker = loader.prefetch_thread();
  CHECK(maker != std::thread::id());
  CHECK(maker != std::this_thread::get_id());
  // Both of the pool's threads (the caller and its worker) sleep in one loop until the batches
  // ahead are made, for 10 s at most: nobody but the loader's own thread can make them.
  std::mutex mutex;
  std::vector<std::thread::id> pool_threads;
  kernels::cpu::parallel_for(2, 1, [&](int64_t, int64_t) {
    {
      std::lock_guard lock(mutex);
      pool_threads.push_back(std::this_thread::get_id());
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (loader.batches_made() < 4 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  kernels::set_num_threads(saved);
  CHECK(loader.batches_made() == 4);
  CHECK(pool_threads.size() == 2);
  CHECK(std::find(pool_threads.begin(), pool_threads.end(), maker) == pool_threads.end());
  // And they are the right batches.
  int64_t compared = 0;
  for (auto expected = whole.begin(); batch != loader.end(); ++batch, ++expected, ++compared) {
    CHECK(batch->x.to_vector<float>() == expected->x.to_vector<float>());
    CHECK(batch->y.to_vector<int64_t>() == expected->y.to_vector<int64_t>());
  }
  CHECK(compared == 64);
}

#if defined(__linux__)
namespace {
// How many of this process's threads run under scheduling policy `policy` (field 41 of
// /proc/self/task/<tid>/stat, counted after the parenthesised name).
int threads_with_policy(int policy) {
  int count = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream file(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 41 && fields >> field; ++i) {
      if (i == 41 && std::stoi(field) == policy) ++count;
    }
  }
  return count;
}
}  // namespace

TEST_CASE("DataLoader's background thread runs at idle priority, and only that thread", "[data]") {
  CHECK(threads_with_policy(SCHED_IDLE) == 0);
  data::DataLoader loader(tiny(), {.batch_size = 2});
  int during = -1;
  for (auto& batch : loader) {
    (void)batch;
    if (during < 0) during = threads_with_policy(SCHED_IDLE);
  }
  CHECK(during == 1);
}
#endif

TEST_CASE("DataLoader shuffles by (seed, epoch), reproducibly", "[data]") {
  data::DataLoader a(tiny(), {.batch_size = 3, .shuffle = true, .seed = 7});
  data::DataLoader b(tiny(), {.batch_size = 3, .shuffle = true, .seed = 7});
  std::vector<int64_t> a0 = epoch_labels(a), a1 = epoch_labels(a);
  CHECK(a0 != a1);  // the epoch advanced
  CHECK(std::set<int64_t>(a0.begin(), a0.end()).size() == 10);
  b.set_epoch(1);
  CHECK(epoch_labels(b) == a1);
  CHECK(data::shuffled_indices(1000, 1, 0) == data::shuffled_indices(1000, 1, 0));
  CHECK(data::shuffled_indices(1000, 1, 0) != data::shuffled_indices(1000, 2, 0));
}

TEST_CASE("DataLoader: breaking out early and bad options", "[data][errors]") {
  data::DataLoader loader(tiny(), {.batch_size = 1, .prefetch = 2});
  for (auto& batch : loader) {
    (void)batch;
    break;  // the prefetch thread must stop cleanly
  }
  CHECK(epoch_labels(loader).size() == 10);
  CHECK_THROWS_WITH(data::DataLoader(tiny(), {.batch_size = 0}), Contains("batch_size"));
}

TEST_CASE("DataLoader checks its images' dtype and the sampler's indices before any batch is made", "[data][errors]") {
  // Batches are made in slices on pool workers, where an error would end the process: every
  // input that could fail there is refused on the caller's thread.
  data::TensorDataset doubles{from_vector(std::vector<double>{0.25, 0.5, 0.75}, {3, 1}),
                              from_vector(std::vector<int64_t>{0, 1, 2}, {3})};
  data::DataLoader loader(doubles, {.batch_size = 2});
  std::vector<float> seen;
  for (auto& [x, y] : loader) {
    CHECK(x.dtype() == DType::f32);
    for (float v : x.to_vector<float>()) seen.push_back(v);
  }
  CHECK(seen == std::vector<float>{0.25f, 0.5f, 0.75f});

  data::TensorDataset ints{from_vector(std::vector<int64_t>{1, 2, 3}, {3, 1}), doubles.labels};
  CHECK_THROWS_WITH(data::DataLoader(ints, {}), Contains("expected u8 images") && Contains("i64"));

  struct PastTheEnd final : data::Sampler {
    std::vector<int64_t> indices(int64_t dataset_size, int64_t) const override { return {0, dataset_size}; }
  };
  data::DataLoader bad_sampler(tiny(), {.batch_size = 2}, std::make_shared<PastTheEnd>());
  CHECK_THROWS_WITH(bad_sampler.begin(), Contains("sampler gave index 10 for a dataset of 10 examples"));
}

TEST_CASE("DistributedSampler partitions the (padded) order across ranks", "[data]") {
  std::vector<int64_t> all;
  for (int rank = 0; rank < 3; ++rank) {
    std::vector<int64_t> mine = data::DistributedSampler(3, rank, /*shuffle=*/true, 5).indices(10, 2);
    CHECK(mine.size() == 4);  // ceil(10 / 3)
    all.insert(all.end(), mine.begin(), mine.end());
  }
  CHECK(std::set<int64_t>(all.begin(), all.end()).size() == 10);  // every example is seen
  CHECK(data::DistributedSampler(2, 1, false).indices(5, 0) == std::vector<int64_t>{1, 3, 0});
  CHECK_THROWS_WITH(data::DistributedSampler(2, 2), Contains("rank 2"));
}

TEST_CASE("DataLoader delivers each batch on the requested device, the same values as on cpu:0", "[data]") {
  for (int prefetch : {0, 2}) {
    data::DataLoader host(tiny(), {.batch_size = 4, .shuffle = true, .seed = 3, .prefetch = prefetch});
    data::DataLoader moved(tiny(),
                           {.batch_size = 4, .shuffle = true, .seed = 3, .prefetch = prefetch, .device = cpu(1)});
    std::vector<data::Batch> expected;
    for (auto& batch : host) expected.push_back(batch);
    size_t b = 0;
    for (auto& [x, y] : moved) {
      REQUIRE(b < expected.size());
      CHECK(x.device() == cpu(1));
      CHECK(y.device() == cpu(1));
      CHECK(x.to_vector<float>() == expected[b].x.to_vector<float>());
      CHECK(y.to_vector<int64_t>() == expected[b].y.to_vector<int64_t>());
      ++b;
    }
    CHECK(b == expected.size());
  }
}

TEST_CASE("DataLoader: pin_memory and a CUDA device without a GPU fail at construction, saying why", "[data][errors]") {
  if (cuda::device_count() > 0) return;  // tests/cuda/test_cuda_pinned.cpp covers the working case
  const std::string reason = cuda::is_built() ? "no CUDA device is available" : "built without CUDA";
  REQUIRE_THROWS_WITH(
      data::DataLoader(tiny(), {.pin_memory = true}),
      Contains("DataLoader: pin_memory: cannot allocate pinned (page-locked) host memory") && Contains(reason));
  REQUIRE_THROWS_WITH(data::DataLoader(tiny(), {.device = cuda_device(0)}),
                      Contains("DataLoader: device: cannot use cuda:0") && Contains(reason));
  // The default loader needs nothing of the sort.
  data::DataLoader plain(tiny(), {.batch_size = 5});
  for (auto& [x, y] : plain) CHECK_FALSE(x.is_pinned());
}
