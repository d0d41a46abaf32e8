// A checksum of a checkpoint's tensors, kept in its metadata so that a flipped bit in the file
// is reported when it is loaded instead of trained on. It guards against damage, not against
// tampering: it is no cryptographic hash.
#pragma once

#include <map>
#include <string>

#include "duet/core/tensor.h"

namespace duet::optim {

// 16 hex digits over every tensor's name, dtype, shape and bytes, in name order. The tensors may
// live on any device. A change of any one 8-byte word of the data always changes the result.
std::string tensors_checksum(const std::map<std::string, Tensor>& tensors);

}  // namespace duet::optim
