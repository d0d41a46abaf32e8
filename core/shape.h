// Shapes and strides: vectors of int64, and the arithmetic on them.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace duet {

// A std::vector<int64_t> in every respect but its type, which is duet's: so `out << shape`
// finds duet's operator<< from any namespace (an alias of std::vector could not be printed
// that way without declaring operators in std). Each converts to the other implicitly.
struct Shape : std::vector<int64_t> {
  using std::vector<int64_t>::vector;
  Shape() = default;
  Shape(std::vector<int64_t> sizes) : std::vector<int64_t>(std::move(sizes)) {}
};

int64_t numel(const Shape& sizes);
// Row-major strides, in elements.
Shape contiguous_strides(const Shape& sizes);
// "[2, 3, 4]", and "[]" for a scalar's: how libtorch prints sizes(), and how duet's messages
// and Tensor::describe() ("f32[2, 3] on cpu:0") spell a shape. Tensor::str() keeps PyTorch's
// "size=(2, 3)" for an empty tensor, as torch prints it.
std::string shape_str(const Shape& sizes);
std::ostream& operator<<(std::ostream& out, const Shape& sizes);
// NumPy broadcasting of two shapes; throws naming `op` and both shapes when they clash.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Maps a possibly negative dim into [0, ndim); throws naming `op` when out of range.
int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace duet
