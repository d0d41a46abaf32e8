#include "duet/data/idx.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <type_traits>

#include "duet/autograd/factory.h"

namespace duet::data {
namespace {

// Large enough for any real IDX file, small enough that a corrupt gzip stream claiming
// gigabytes fails with a message instead of exhausting memory.
constexpr size_t kMaxFileBytes = size_t(1) << 31;

uint32_t read_be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

struct ElementType {
  size_t bytes;
  DType dtype;
  const char* name;
};

ElementType element_type(uint8_t code, const std::string& source) {
  switch (code) {
    case 0x08:
      return {1, DType::u8, "unsigned byte"};
    case 0x09:
      return {1, DType::i64, "signed byte"};
    case 0x0B:
      return {2, DType::i64, "short"};
    case 0x0C:
      return {4, DType::i64, "int"};
    case 0x0D:
      return {4, DType::f32, "float"};
    case 0x0E:
      return {8, DType::f64, "double"};
    default:
      DUET_FAIL(source, ": not an IDX file: unknown element type code 0x", std::hex, int(code),
                " in byte 2 (expected 0x08, 0x09, 0x0B, 0x0C, 0x0D or 0x0E)");
  }
}

// Big-endian element k of the payload, widened to T.
template <class T> T element_at(const uint8_t* p, uint8_t code) {
  switch (code) {
    case 0x08:
      return static_cast<T>(p[0]);
    case 0x09:
      return static_cast<T>(static_cast<int8_t>(p[0]));
    case 0x0B:
      return static_cast<T>(static_cast<int16_t>((uint16_t(p[0]) << 8) | p[1]));
    case 0x0C:
      return static_cast<T>(static_cast<int32_t>(read_be32(p)));
    case 0x0D: {
      uint32_t bits = read_be32(p);
      float f;
      std::memcpy(&f, &bits, 4);
      return static_cast<T>(f);
    }
    default: {
      uint64_t bits = (uint64_t(read_be32(p)) << 32) | read_be32(p + 4);
      double d;
      std::memcpy(&d, &bits, 8);
      return static_cast<T>(d);
    }
  }
}

}  // namespace

std::vector<uint8_t> read_maybe_gzipped(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  DUET_CHECK(file != nullptr, path, ": cannot open: ", std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  while (true) {
    int n = gzread(file, chunk, sizeof chunk);
    if (n < 0) {
      int code = 0;
      std::string message = gzerror(file, &code);
      gzclose(file);
      DUET_FAIL(path, ": corrupt or unreadable gzip data: ", message);
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk, chunk + n);
    if (bytes.size() > kMaxFileBytes) {
      gzclose(file);
      DUET_FAIL(path, ": larger than ", kMaxFileBytes, " bytes once decompressed; not an IDX file");
    }
  }
  // gzread stops early on a truncated gzip stream without an error; gzclose reports it.
  int status = gzclose(file);
  DUET_CHECK(status == Z_OK, path, ": truncated or corrupt gzip stream (zlib error ", status, ")");
  return bytes;
}

Tensor parse_idx(const uint8_t* bytes, size_t size, const std::string& source) {
  DUET_CHECK(size >= 4, source, ": too short for an IDX header (", size, " bytes)");
  DUET_CHECK(bytes[0] == 0 && bytes[1] == 0, source, ": not an IDX file: bad magic number 0x", std::hex,
             read_be32(bytes), " (the first two bytes must be zero)");
  ElementType type = element_type(bytes[2], source);
  size_t ndims = bytes[3];
  DUET_CHECK(ndims >= 1, source, ": IDX header declares 0 dimensions");
  size_t header = 4 + 4 * ndims;
  DUET_CHECK(size >= header, source, ": truncated IDX header: ", ndims, " dimensions need ", header,
             " bytes, the file has ", size);
  Shape sizes;
  size_t count = 1;
  for (size_t d = 0; d < ndims; ++d) {
    uint32_t n = read_be32(bytes + 4 + 4 * d);
    sizes.push_back(n);
    // Overflow-safe: any count beyond the file's size is an error below anyway.
    count = (n != 0 && count > size / n) ? size + 1 : count * n;
  }
  size_t expected = header + (count > size ? size + 1 : count * type.bytes);
  DUET_CHECK(expected == size, source, ": IDX dimensions ", shape_str(sizes), " of ", type.name, " need ",
             count > size ? std::string("more than ") + std::to_string(size) : std::to_string(expected),
             " bytes, but the file holds ", size);
  Tensor out = empty(sizes, {.dtype = type.dtype});
  const uint8_t* payload = bytes + header;
  dispatch_dtype(type.dtype, [&]<class T>() {
    T* dst = out.data<T>();
    if constexpr (std::is_same_v<T, uint8_t>) {
      std::memcpy(dst, payload, count);
    } else {
      for (size_t i = 0; i < count; ++i) dst[i] = element_at<T>(payload + i * type.bytes, bytes[2]);
    }
  });
  return out;
}

Tensor read_idx(const std::string& path) {
  std::vector<uint8_t> bytes = read_maybe_gzipped(path);
  return parse_idx(bytes.data(), bytes.size(), path);
}

}  // namespace duet::data
