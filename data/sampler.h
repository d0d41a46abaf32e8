// Samplers: the order in which a DataLoader visits examples, epoch by epoch.
#pragma once

#include <cstdint>
#include <vector>

namespace duet::data {

// A permutation of 0..n-1 that depends only on (seed, epoch): Fisher-Yates driven by Philox,
// so it is the same on every machine and standard library.
std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, int64_t epoch);

class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual std::vector<int64_t> indices(int64_t dataset_size, int64_t epoch) const = 0;
};

class SequentialSampler final : public Sampler {
 public:
  std::vector<int64_t> indices(int64_t dataset_size, int64_t epoch) const override;
};

class RandomSampler final : public Sampler {
 public:
  explicit RandomSampler(uint64_t seed) : seed_(seed) {}
  std::vector<int64_t> indices(int64_t dataset_size, int64_t epoch) const override;

 private:
  uint64_t seed_;
};

// Rank `rank` of `world` sees every world-th example of the (shuffled) order, as in
// torch.utils.data.DistributedSampler: the order is padded by repeating its head so every
// rank gets ceil(n / world) examples. Every rank must use the same seed and epoch.
class DistributedSampler final : public Sampler {
 public:
  DistributedSampler(int world, int rank, bool shuffle = true, uint64_t seed = 0);
  std::vector<int64_t> indices(int64_t dataset_size, int64_t epoch) const override;

 private:
  int world_, rank_;
  bool shuffle_;
  uint64_t seed_;
};

}  // namespace duet::data
