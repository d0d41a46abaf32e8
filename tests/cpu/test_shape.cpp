// Shape: printed as "[2, 3]" from any namespace, and interchangeable with std::vector<int64_t>.
#include <catch2/catch.hpp>

#include <sstream>

#include "duet/duet.h"

namespace elsewhere {
// No using-directive here: operator<< must come from argument-dependent lookup.
std::string print(const duet::Shape& shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}
}  // namespace elsewhere

TEST_CASE("a Shape prints as [2, 3], as describe() and the error messages spell it", "[shape]") {
  using duet::Shape;
  CHECK(elsewhere::print(Shape{2, 3}) == "[2, 3]");
  CHECK(elsewhere::print(Shape{7}) == "[7]");
  CHECK(elsewhere::print(Shape{}) == "[]");  // a scalar's
  duet::Tensor t = duet::zeros({4, 0, 2});
  CHECK(elsewhere::print(t.sizes()) == "[4, 0, 2]");
  CHECK(t.describe() == "f32" + elsewhere::print(t.sizes()) + " on cpu:0");
  // Catch finds it too (a failed CHECK on shapes shows "[2, 3]", not "{ 2, 3 }").
  CHECK(Catch::Detail::stringify(Shape{2, 3}) == "[2, 3]");
}

TEST_CASE("a Shape converts to and from std::vector<int64_t>", "[shape]") {
  std::vector<int64_t> dims = {3, 2};
  duet::Shape shape = dims;
  CHECK(shape == duet::Shape{3, 2});
  CHECK(duet::zeros({6}).view(dims).sizes() == shape);
  const std::vector<int64_t>& as_vector = shape;
  CHECK(as_vector == dims);
}
