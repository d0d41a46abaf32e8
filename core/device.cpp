#include "duet/core/device.h"

#include <charconv>

#include "duet/core/error.h"

namespace duet {

std::string Device::str() const { return (is_cpu() ? "cpu:" : "cuda:") + std::to_string(index); }

Device Device::parse(std::string_view text) {
  auto colon = text.find(':');
  std::string_view kind = text.substr(0, colon);
  Device device;
  if (kind == "cpu") {
    device.type = DeviceType::CPU;
  } else if (kind == "cuda") {
    device.type = DeviceType::CUDA;
  } else {
    DUET_FAIL("invalid device '", text, "': expected cpu, cpu:N, cuda or cuda:N");
  }
  if (colon != std::string_view::npos) {
    std::string_view digits = text.substr(colon + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), device.index);
    DUET_CHECK(ec == std::errc() && end == digits.data() + digits.size() && !digits.empty() && device.index >= 0 &&
                   device.index < kMaxDevicesPerType,
               "invalid device index in '", text, "': expected 0..", kMaxDevicesPerType - 1);
  }
  return device;
}

std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.str(); }

}  // namespace duet
