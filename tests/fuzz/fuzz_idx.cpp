// libFuzzer target: parse_idx must either return a tensor or throw duet::Error, never crash.
#include <cstddef>
#include <cstdint>

#include "duet/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    duet::Tensor t = duet::data::parse_idx(data, size, "fuzz input");
    (void)t.numel();
  } catch (const duet::Error&) {
  }
  return 0;
}
