// What duet's register-blocked CPU kernels share (conv2d_direct.cpp, gemm.cpp's PackedPanels):
// one 64-byte vector type, and compile-time register blocks with a narrower last block.
#pragma once

#include <cstdint>
#include <cstring>

namespace duet::kernels::cpu {

// One vector of T: 64 bytes, an AVX-512 register (GCC splits it into two on a machine without).
// Loads and stores go through memcpy: any alignment, no aliasing questions.
template <class T> struct Simd {
  static constexpr int64_t kLanes = 64 / sizeof(T);
  typedef T Vec __attribute__((vector_size(64)));
  static Vec load(const T* p) {
    Vec v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(T* p, Vec v) { std::memcpy(p, &v, sizeof v); }
  static Vec splat(T s) { return Vec{} + s; }
  static T sum(Vec v) {
    T s = 0;
    for (int64_t i = 0; i < kLanes; ++i) s += v[i];
    return s;
  }
};

// Calls f.template operator()<N>() for the N in [1, Max] equal to n (n >= Max: Max): a register
// block's size must be known at compile time, and the last block of a dimension is narrower.
template <int Max, class F> void with_block(int64_t n, F&& f) {
  if constexpr (Max >= 1) {
    if (n >= Max) return f.template operator()<Max>();
    with_block<Max - 1>(n, f);
  }
}

}  // namespace duet::kernels::cpu
