#include "duet/core/generator.h"

namespace duet {

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard lock(mutex_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t Generator::seed() const {
  std::lock_guard lock(mutex_);
  return seed_;
}

uint64_t Generator::offset() const {
  std::lock_guard lock(mutex_);
  return offset_;
}

void Generator::set_offset(uint64_t offset) {
  std::lock_guard lock(mutex_);
  offset_ = offset;
}

uint64_t Generator::reserve(uint64_t count) {
  std::lock_guard lock(mutex_);
  uint64_t first = offset_;
  offset_ += (count + 3) / 4;
  return first;
}

Generator& default_generator() {
  static Generator generator(0);
  return generator;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace duet
