// duet::Error and the checking macros every layer uses.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace duet {

// The one exception type duet throws for bad input or failed library calls.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <class... Parts> std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

}  // namespace duet

// DUET_CHECK(cond, "message parts", value, ...): throws duet::Error when cond is false.
#define DUET_CHECK(cond, ...)                                              \
  do {                                                                     \
    if (!(cond)) throw ::duet::Error(::duet::detail::concat(__VA_ARGS__)); \
  } while (0)

#define DUET_FAIL(...) throw ::duet::Error(::duet::detail::concat(__VA_ARGS__))
