#include "duet/nn/safetensors.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "duet/autograd/factory.h"

namespace duet::nn {
namespace {

using json = nlohmann::json;

// The header may be at most this large (the format's reference implementation uses 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

const char* dtype_code(DType t) {
  switch (t) {
    case DType::f32:
      return "F32";
    case DType::f64:
      return "F64";
    case DType::i64:
      return "I64";
    case DType::u8:
      return "U8";
  }
  return "?";
}

DType parse_dtype(const std::string& code, const std::string& source, const std::string& name) {
  if (code == "F32") return DType::f32;
  if (code == "F64") return DType::f64;
  if (code == "I64") return DType::i64;
  if (code == "U8") return DType::u8;
  DUET_FAIL(source, ": tensor '", name, "' has dtype ", code, ", which duet does not support (F32, F64, I64, U8)");
}

void write_all(std::FILE* file, const void* data, size_t bytes, const std::string& path) {
  DUET_CHECK(bytes == 0 || std::fwrite(data, 1, bytes, file) == bytes, path, ": write failed: ", std::strerror(errno));
}

// "12345" -> 12345; anything but digits -> 0.
pid_t parse_pid(const std::string& text) {
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  return ec == std::errc() && end == text.data() + text.size() && pid > 0 ? pid : 0;
}

// Removes the temporary files that killed writers of `path` left beside it. A file of a process
// that still runs (another save in progress) is left alone.
void remove_stale_partials(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string name = target.filename().string();
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
    const std::string file = entry.path().filename().string();
    for (const std::string& prefix : {name + ".duet-partial-", name + ".tmp."}) {
      if (file.rfind(prefix, 0) != 0) continue;
      const pid_t pid = parse_pid(file.substr(prefix.size()));
      if (pid != 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) fs::remove(entry.path(), error);
    }
  }
}

}  // namespace

std::string partial_path(const std::string& path) { return path + ".duet-partial-" + std::to_string(::getpid()); }

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<Tensor> host;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    DUET_CHECK(!header.contains(name), "save_safetensors: duplicate tensor name '", name, "'");
    Tensor t = tensor.detach().to(cpu()).contiguous();
    uint64_t bytes = static_cast<uint64_t>(t.numel()) * t.element_size();
    header[name] = {{"dtype", dtype_code(t.dtype())}, {"shape", t.sizes()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    host.push_back(std::move(t));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  uint64_t header_size = text.size();
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(header_size >> (8 * i));

  remove_stale_partials(path);
  std::string temp = partial_path(path);
  std::FILE* file = std::fopen(temp.c_str(), "wb");
  DUET_CHECK(file != nullptr, path, ": cannot write: ", std::strerror(errno));
  try {
    write_all(file, length, 8, temp);
    write_all(file, text.data(), text.size(), temp);
    for (const Tensor& t : host) write_all(file, t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size(), temp);
    DUET_CHECK(std::fflush(file) == 0 && ::fsync(::fileno(file)) == 0, temp, ": flush failed: ", std::strerror(errno));
  } catch (...) {
    std::fclose(file);
    std::remove(temp.c_str());
    throw;
  }
  DUET_CHECK(std::fclose(file) == 0, temp, ": close failed: ", std::strerror(errno));
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::remove(temp.c_str());
    DUET_FAIL(path, ": cannot replace it with the new checkpoint: ", ec.message());
  }
}

SafeTensors parse_safetensors(const uint8_t* bytes, size_t size, const std::string& source) {
  DUET_CHECK(size >= 8, source, ": too short for a safetensors file (", size, " bytes)");
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= uint64_t(bytes[i]) << (8 * i);
  DUET_CHECK(header_size <= kMaxHeaderBytes && header_size <= size - 8, source, ": header length ", header_size,
             " does not fit in the file (", size, " bytes)");
  json header;
  try {
    header = json::parse(bytes + 8, bytes + 8 + header_size);
  } catch (const json::exception& e) {
    DUET_FAIL(source, ": the header is not valid JSON: ", e.what());
  }
  DUET_CHECK(header.is_object(), source, ": the header is not a JSON object");
  const uint8_t* data = bytes + 8 + header_size;
  uint64_t data_size = size - 8 - header_size;

  SafeTensors out;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto item = header.begin(); item != header.end(); ++item) {
    // Plain references, not a structured binding: the lambda below captures them.
    const std::string& name = item.key();
    const json& entry = item.value();
    if (name == "__metadata__") {
      DUET_CHECK(entry.is_object(), source, ": __metadata__ must be an object of strings");
      for (const auto& [key, value] : entry.items()) {
        DUET_CHECK(value.is_string(), source, ": __metadata__ entry '", key, "' is not a string");
        out.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    auto field = [&](const char* key) -> const json& {
      DUET_CHECK(entry.is_object() && entry.contains(key), source, ": tensor '", name, "' has no '", key, "' field");
      return entry.at(key);
    };
    const json& dtype = field("dtype");
    const json& shape = field("shape");
    const json& offsets = field("data_offsets");
    DUET_CHECK(dtype.is_string(), source, ": tensor '", name, "': dtype must be a string");
    DType t = parse_dtype(dtype.get<std::string>(), source, name);
    DUET_CHECK(shape.is_array(), source, ": tensor '", name, "': shape must be an array");
    Shape sizes;
    uint64_t count = 1;
    for (const json& dim : shape) {
      DUET_CHECK(dim.is_number_unsigned(), source, ": tensor '", name,
                 "': shape entries must be non-negative integers");
      uint64_t n = dim.get<uint64_t>();
      count = (n != 0 && count > data_size / n) ? data_size + 1 : count * n;
      sizes.push_back(static_cast<int64_t>(std::min<uint64_t>(n, INT64_MAX)));
    }
    DUET_CHECK(
        offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() && offsets[1].is_number_unsigned(),
        source, ": tensor '", name, "': data_offsets must be [begin, end]");
    uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    DUET_CHECK(begin <= end && end <= data_size, source, ": tensor '", name, "': data_offsets [", begin, ", ", end,
               "] fall outside the ", data_size, "-byte data section");
    DUET_CHECK(count <= data_size && end - begin == count * element_size(t), source, ": tensor '", name, "': shape ",
               shape_str(sizes), " of ", dtype_name(t), " needs ", count * element_size(t),
               " bytes, data_offsets give ", end - begin);
    ranges.emplace_back(begin, end);
    Tensor tensor = empty(sizes, {.dtype = t});
    if (end > begin) std::memcpy(tensor.data_ptr(), data + begin, end - begin);
    out.tensors[name] = std::move(tensor);
  }
  // The format requires the tensors to tile the data section exactly: no gaps, no overlaps.
  std::sort(ranges.begin(), ranges.end());
  uint64_t covered = 0;
  for (const auto& [begin, end] : ranges) {
    DUET_CHECK(begin == covered, source, ": the data section has ", begin < covered ? "overlapping tensors" : "a gap",
               " at byte ", std::min(begin, covered));
    covered = end;
  }
  DUET_CHECK(covered == data_size, source, ": ", data_size - covered, " bytes after the last tensor");
  return out;
}

SafeTensors load_safetensors(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  DUET_CHECK(file.good(), path, ": cannot open: ", std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return parse_safetensors(bytes.data(), bytes.size(), path);
}

}  // namespace duet::nn
