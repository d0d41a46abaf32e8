// A DataLoader that assembles batches in pinned memory and sends them to the GPU from its
// background thread must yield exactly the batches of a plain loader, with and without
// prefetching, over more than one epoch.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "duet/duet.h"

using namespace duet;

namespace {

const Device kGpu = cuda_device(0);

// 600 random 1x28x28 u8 images with labels, like Fashion-MNIST.
data::TensorDataset random_images() {
  std::vector<uint8_t> pixels(600 * 28 * 28);
  std::vector<int64_t> labels(600);
  uint32_t state = 12345;
  for (auto& p : pixels) p = static_cast<uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 10);
  return {from_vector(pixels, {600, 1, 28, 28}), from_vector(labels, {600})};
}

// Every batch of two epochs, brought to the host.
std::vector<data::Batch> two_epochs(data::DataLoader& loader) {
  std::vector<data::Batch> out;
  for (int epoch = 0; epoch < 2; ++epoch)
    for (auto& batch : loader) out.push_back({batch.x.to(cpu()), batch.y.to(cpu())});
  return out;
}

}  // namespace

TEST_CASE("a DataLoader that pins and sends batches to the GPU yields exactly the plain batches", "[cuda]") {
  const data::TensorDataset images = random_images();
  for (int prefetch : {0, 2}) {
    data::DataLoaderOptions plain{.batch_size = 64, .shuffle = true, .seed = 9, .prefetch = prefetch};
    data::DataLoader reference(images, plain);
    const std::vector<data::Batch> expected = two_epochs(reference);

    data::DataLoaderOptions pinned = plain, sent = plain, sent_pageable = plain;
    pinned.pin_memory = true;
    sent.pin_memory = true;
    sent.device = kGpu;
    sent_pageable.device = kGpu;
    for (const data::DataLoaderOptions& options : {pinned, sent, sent_pageable}) {
      data::DataLoader loader(images, options);
      for (auto& [x, y] : loader) {
        CHECK(x.device() == options.device.value_or(cpu()));
        CHECK(x.is_pinned() == (options.pin_memory && !options.device));
        break;
      }
      loader.set_epoch(0);  // the peek above began epoch 0
      const std::vector<data::Batch> got = two_epochs(loader);
      REQUIRE(got.size() == expected.size());
      for (size_t b = 0; b < got.size(); ++b) {
        test::require_identical(got[b].x, expected[b].x, "images of batch " + std::to_string(b));
        test::require_identical(got[b].y, expected[b].y, "labels of batch " + std::to_string(b));
      }
    }
  }
}
