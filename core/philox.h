// Philox 4x32-10, a counter-based generator (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", SC'11). Element i of a draw depends only on (seed, counter), so the
// CPU loop and a CUDA kernel produce the same numbers in any order or thread split.
#pragma once

#include <cmath>
#include <cstdint>

#include "duet/core/macros.h"

namespace duet::philox {

struct Block {
  uint32_t v[4];
};

DUET_HD inline Block generate(uint64_t seed, uint64_t counter) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
  uint32_t c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kMul0) * c0;
    uint64_t p1 = static_cast<uint64_t>(kMul1) * c2;
    uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {{c0, c1, c2, c3}};
}

// The i-th 32-bit number of the stream that starts at block `offset`.
DUET_HD inline uint32_t bits(uint64_t seed, uint64_t offset, uint64_t i) {
  return generate(seed, offset + i / 4).v[i % 4];
}

// Uniform in [0, 1) with 24 random bits: exactly representable in float, so CPU and GPU agree.
DUET_HD inline double uniform(uint32_t x) { return static_cast<double>(x >> 8) * (1.0 / 16777216.0); }

// Standard normal for element i by Box-Muller over the pair of numbers (2k, 2k+1).
DUET_HD inline double normal(uint64_t seed, uint64_t offset, uint64_t i) {
  uint64_t pair = i / 2;
  Block b = generate(seed, offset + pair / 2);
  uint32_t x0 = b.v[(pair % 2) * 2], x1 = b.v[(pair % 2) * 2 + 1];
  double u1 = (static_cast<double>(x0) + 1.0) * (1.0 / 4294967296.0);  // (0, 1]
  double u2 = static_cast<double>(x1) * (1.0 / 4294967296.0);          // [0, 1)
  double radius = std::sqrt(-2.0 * std::log(u1));
  double angle = 6.283185307179586476925 * u2;
  return (i % 2 == 0) ? radius * std::cos(angle) : radius * std::sin(angle);
}

}  // namespace duet::philox
