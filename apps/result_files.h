// Helpers for the result files `duet compare` and `duet regime` write.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "duet/core/error.h"

namespace duet::apps {

// A number, or JSON's null.
inline nlohmann::json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

// Opens `path`, lets `write` fill it, and throws duet::Error naming `what` and the path when the
// file cannot be opened or a write fails.
template <class Write> void write_checked(const std::string& path, const char* what, Write write) {
  std::ofstream out(path);
  DUET_CHECK(out, what, ": cannot write ", path);
  write(out);
  DUET_CHECK(out.good(), what, ": writing ", path, " failed");
}

}  // namespace duet::apps
