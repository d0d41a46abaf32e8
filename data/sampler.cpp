#include "duet/data/sampler.h"

#include <numeric>

#include "duet/core/error.h"
#include "duet/core/philox.h"

namespace duet::data {

std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  // Each epoch gets its own range of Philox counters.
  uint64_t base = static_cast<uint64_t>(epoch) << 40;
  for (int64_t i = n - 1; i > 0; --i) {
    philox::Block b = philox::generate(seed, base + static_cast<uint64_t>(i));
    uint64_t bits = (uint64_t(b.v[0]) << 32) | b.v[1];
    // Lemire's multiply-shift maps 64 random bits onto [0, i] with negligible bias.
    auto j = static_cast<int64_t>((static_cast<unsigned __int128>(bits) * uint64_t(i + 1)) >> 64);
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

std::vector<int64_t> SequentialSampler::indices(int64_t dataset_size, int64_t) const {
  std::vector<int64_t> order(static_cast<size_t>(dataset_size));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

std::vector<int64_t> RandomSampler::indices(int64_t dataset_size, int64_t epoch) const {
  return shuffled_indices(dataset_size, seed_, epoch);
}

DistributedSampler::DistributedSampler(int world, int rank, bool shuffle, uint64_t seed)
    : world_(world), rank_(rank), shuffle_(shuffle), seed_(seed) {
  DUET_CHECK(world >= 1 && rank >= 0 && rank < world, "DistributedSampler: rank ", rank, " is not in a world of ",
             world);
}

std::vector<int64_t> DistributedSampler::indices(int64_t dataset_size, int64_t epoch) const {
  DUET_CHECK(dataset_size > 0, "DistributedSampler: empty dataset");
  std::vector<int64_t> order =
      shuffle_ ? shuffled_indices(dataset_size, seed_, epoch) : SequentialSampler().indices(dataset_size, epoch);
  int64_t per_rank = (dataset_size + world_ - 1) / world_;
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(per_rank));
  for (int64_t k = 0; k < per_rank; ++k) {
    int64_t position = (k * world_ + rank_) % dataset_size;  // wraps onto the head to pad
    mine.push_back(order[static_cast<size_t>(position)]);
  }
  return mine;
}

}  // namespace duet::data
