// The IDX format of (Fashion-)MNIST: a big-endian header, then the raw array.
//   bytes 0-1: zero; byte 2: element type code; byte 3: number of dims;
//   then one 4-byte size per dim; then prod(sizes) elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "duet/core/tensor.h"

namespace duet::data {

// Reads a whole file, gunzipping it if it is gzip (plain files are read as they are).
// Throws duet::Error naming the file when it cannot be opened or decompressed.
std::vector<uint8_t> read_maybe_gzipped(const std::string& path);

// Parses an IDX buffer into a CPU tensor: u8 for type 0x08, i64 for the integer codes
// 0x09/0x0B/0x0C, f32 for 0x0D and f64 for 0x0E. Every header field is checked against
// the buffer's size; `source` names the file in the error.
Tensor parse_idx(const uint8_t* bytes, size_t size, const std::string& source);

// read_maybe_gzipped + parse_idx.
Tensor read_idx(const std::string& path);

}  // namespace duet::data
