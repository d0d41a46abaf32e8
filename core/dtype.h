// DType: the element types duet stores, and a switch that turns one into a C++ type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>

#include "duet/core/error.h"

namespace duet {

// f32 is the main type; f64 serves gradcheck on the CPU; i64 holds labels and indices;
// u8 holds raw images and the 0/1 results of comparisons.
enum class DType : uint8_t { f32, f64, i64, u8 };

constexpr size_t element_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f64:
      return 8;
    case DType::i64:
      return 8;
    case DType::u8:
      return 1;
  }
  return 0;
}

constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::f64; }

const char* dtype_name(DType t);
std::ostream& operator<<(std::ostream& out, DType t);

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }

// Calls fn.template operator()<T>() with the C++ type of `t`:
//   dispatch_dtype(t, [&]<class T>() { ... });
template <class Fn> decltype(auto) dispatch_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32:
      return fn.template operator()<float>();
    case DType::f64:
      return fn.template operator()<double>();
    case DType::i64:
      return fn.template operator()<int64_t>();
    case DType::u8:
      return fn.template operator()<uint8_t>();
  }
  DUET_FAIL("unknown dtype ", static_cast<int>(t));
}

// The same, restricted to the floating types; `op` names the caller in the error.
template <class Fn> decltype(auto) dispatch_floating(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::f32:
      return fn.template operator()<float>();
    case DType::f64:
      return fn.template operator()<double>();
    default:
      DUET_FAIL(op, ": expected a floating dtype (f32 or f64), got ", dtype_name(t));
  }
}

}  // namespace duet
