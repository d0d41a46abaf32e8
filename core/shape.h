// Shapes and strides: plain vectors of int64, and the arithmetic on them.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace duet {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& sizes);
// Row-major strides, in elements.
Shape contiguous_strides(const Shape& sizes);
// "[2, 3, 4]"
std::string shape_str(const Shape& sizes);
// NumPy broadcasting of two shapes; throws naming `op` and both shapes when they clash.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Maps a possibly negative dim into [0, ndim); throws naming `op` when out of range.
int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace duet
