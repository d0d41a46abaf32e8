// Device: where a tensor lives. A value type, printed "cpu:0" or "cuda:1".
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace duet {

enum class DeviceType : uint8_t { CPU, CUDA };

// Logical CPU devices (cpu:0..N-1) share host memory but keep separate accounting,
// so both parallel strategies run and are tested on machines with no GPU.
struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  constexpr bool is_cpu() const { return type == DeviceType::CPU; }
  constexpr bool is_cuda() const { return type == DeviceType::CUDA; }
  constexpr bool operator==(const Device&) const = default;

  std::string str() const;
  // Parses "cpu", "cpu:1", "cuda", "cuda:0". Throws duet::Error on anything else.
  static Device parse(std::string_view text);
};

constexpr Device cpu(int index = 0) { return {DeviceType::CPU, index}; }
// Not named cuda(): that would clash with namespace duet::cuda (kernels/cuda/runtime.h), and a
// function and a namespace of one name cannot share a scope.
constexpr Device cuda_device(int index = 0) { return {DeviceType::CUDA, index}; }

// Upper bound on device indices per type; per-device tables are sized by it.
inline constexpr int kMaxDevicesPerType = 64;

std::ostream& operator<<(std::ostream& out, const Device& device);

}  // namespace duet

template <> struct std::hash<duet::Device> {
  size_t operator()(const duet::Device& d) const noexcept {
    return static_cast<size_t>(d.index) * 2 + static_cast<size_t>(d.type);
  }
};
