// Generator: a seed and a position in the Philox stream. Each draw reserves a range of
// counter blocks, so results do not depend on how the work is split across threads.
#pragma once

#include <cstdint>
#include <mutex>

namespace duet {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}

  void manual_seed(uint64_t seed);
  uint64_t seed() const;
  // Position in 128-bit blocks (4 numbers each). Saved in checkpoints with the seed.
  uint64_t offset() const;
  void set_offset(uint64_t offset);
  // Reserves enough blocks for `count` 32-bit numbers and returns the first block.
  uint64_t reserve(uint64_t count);

 private:
  mutable std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The process-wide generator used when a factory is given none.
Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace duet
