// libFuzzer target: parse_safetensors must either return tensors or throw duet::Error.
#include <cstddef>
#include <cstdint>

#include "duet/nn/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    duet::nn::SafeTensors st = duet::nn::parse_safetensors(data, size, "fuzz input");
    (void)st.tensors.size();
  } catch (const duet::Error&) {
  }
  return 0;
}
