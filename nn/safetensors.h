// The safetensors format (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length, a JSON header naming each tensor's dtype, shape and byte range, then the raw
// little-endian data. PyTorch and the `safetensors` package read what duet writes, and duet
// reads theirs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "duet/core/tensor.h"

namespace duet::nn {

struct SafeTensors {
  std::map<std::string, Tensor> tensors;        // CPU, contiguous
  std::map<std::string, std::string> metadata;  // the header's "__metadata__"
};

// Writes atomically: a temporary file beside `path`, flushed, then renamed over it, so a
// crash never leaves a half-written checkpoint. Tensors may live on any device.
// The temporary file is `path` + ".duet-partial-" + the writer's process id. A killed writer
// leaves its one behind; the next save to `path` removes those of processes that no longer run
// on this machine (and the ".tmp.<pid>" ones of duet before this naming).
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// The temporary file save_safetensors writes for `path` in this process.
std::string partial_path(const std::string& path);

SafeTensors load_safetensors(const std::string& path);
// Checks every header field against the buffer; `source` names the file in errors.
SafeTensors parse_safetensors(const uint8_t* bytes, size_t size, const std::string& source);

}  // namespace duet::nn
