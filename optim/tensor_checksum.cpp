#include "duet/optim/tensor_checksum.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace duet::optim {
namespace {

constexpr uint64_t kMultiplier1 = 0x9E3779B97F4A7C15ull;  // odd: multiplying by it is a bijection
constexpr uint64_t kMultiplier2 = 0xC2B2AE3D27D4EB4Full;

// Each step is a bijection of the running hash for a fixed word, and of the word for a fixed
// hash, so one changed word changes every hash after it.
class Hasher {
 public:
  void word(uint64_t w) {
    uint64_t h = hash_ ^ (w * kMultiplier1);
    h = (h << 31) | (h >> 33);
    hash_ = h * kMultiplier2;
  }
  void bytes(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      word(w);
    }
    uint64_t tail = 0;
    if (size > i) std::memcpy(&tail, p + i, size - i);
    word(tail ^ (static_cast<uint64_t>(size - i) << 56));  // the tail's length, so zeros count
  }
  uint64_t finish() const {
    uint64_t h = hash_;
    h ^= h >> 33;
    h *= kMultiplier2;
    h ^= h >> 29;
    return h;
  }

 private:
  uint64_t hash_ = 0x27D4EB2F165667C5ull;
};

}  // namespace

std::string tensors_checksum(const std::map<std::string, Tensor>& tensors) {
  Hasher hasher;
  for (const auto& [name, tensor] : tensors) {
    const Tensor t = tensor.detach().to(cpu()).contiguous();
    hasher.bytes(name.data(), name.size());
    hasher.word(static_cast<uint64_t>(t.dtype()));
    hasher.word(t.sizes().size());
    for (int64_t size : t.sizes()) hasher.word(static_cast<uint64_t>(size));
    hasher.bytes(t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size());
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hasher.finish()));
  return text;
}

}  // namespace duet::optim
