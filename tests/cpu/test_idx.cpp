// The IDX reader: every header field is checked against the file, and errors name the file.
#include <zlib.h>
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "duet/data/fashion_mnist.h"
#include "duet/data/idx.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {

std::vector<uint8_t> idx_bytes(uint8_t type, std::vector<uint32_t> dims, std::vector<uint8_t> payload) {
  std::vector<uint8_t> out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(d >> shift));
  }
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

Tensor parse(const std::vector<uint8_t>& bytes) { return data::parse_idx(bytes.data(), bytes.size(), "test.idx"); }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("duet-test-" + name)).string();
}

}  // namespace

TEST_CASE("IDX: u8 images and big-endian ints parse", "[data][idx]") {
  Tensor images = parse(idx_bytes(0x08, {2, 2, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  CHECK(images.dtype() == DType::u8);
  CHECK(images.sizes() == Shape{2, 2, 3});
  CHECK(images.to_vector<uint8_t>()[11] == 11);

  Tensor ints = parse(idx_bytes(0x0C, {2}, {0, 0, 1, 2, 0xFF, 0xFF, 0xFF, 0xFE}));
  CHECK(ints.dtype() == DType::i64);
  CHECK(ints.to_vector<int64_t>() == std::vector<int64_t>{258, -2});
}

TEST_CASE("IDX: corrupt headers give errors that name the file and the problem", "[data][idx][errors]") {
  CHECK_THROWS_WITH(parse({0, 0, 8}), Contains("test.idx") && Contains("too short"));
  CHECK_THROWS_WITH(parse({1, 0, 8, 1, 0, 0, 0, 1, 7}), Contains("bad magic"));
  CHECK_THROWS_WITH(parse(idx_bytes(0x07, {1}, {1})), Contains("unknown element type"));
  CHECK_THROWS_WITH(parse({0, 0, 8, 3, 0, 0}), Contains("truncated IDX header"));
  CHECK_THROWS_WITH(parse(idx_bytes(0x08, {2, 3}, {1, 2, 3})),
                    Contains("[2, 3]") && Contains("need 18 bytes") && Contains("holds 15"));
  CHECK_THROWS_WITH(parse(idx_bytes(0x08, {0xFFFFFFFF, 0xFFFFFFFF}, {1})), Contains("more than"));
  CHECK_THROWS_WITH(parse(idx_bytes(0x08, {}, {})), Contains("0 dimensions"));
}

TEST_CASE("IDX: gzip and plain files read the same, and a truncated gzip is an error", "[data][idx]") {
  std::vector<uint8_t> bytes = idx_bytes(0x08, {4}, {9, 8, 7, 6});
  std::string plain = temp_path("plain.idx"), gz = temp_path("packed.idx.gz");
  std::ofstream(plain, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  gzFile f = gzopen(gz.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  CHECK(data::read_idx(plain).to_vector<uint8_t>() == std::vector<uint8_t>{9, 8, 7, 6});
  CHECK(data::read_idx(gz).to_vector<uint8_t>() == std::vector<uint8_t>{9, 8, 7, 6});

  std::ifstream in(gz, std::ios::binary);
  std::vector<char> packed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string truncated = temp_path("truncated.idx.gz");
  std::ofstream(truncated, std::ios::binary).write(packed.data(), std::streamsize(packed.size() - 6));
  CHECK_THROWS_WITH(data::read_idx(truncated), Contains(truncated));
  CHECK_THROWS_WITH(data::read_idx(temp_path("missing.idx")), Contains("cannot open"));
  std::remove(plain.c_str());
  std::remove(gz.c_str());
  std::remove(truncated.c_str());
}

TEST_CASE("Fashion-MNIST: a missing folder names the Debian package and --data-dir", "[data][errors]") {
  CHECK(data::FashionMNIST::missing_file("/nonexistent/fashion") == "train-images-idx3-ubyte");
  CHECK_THROWS_WITH(data::FashionMNIST::train("/nonexistent/fashion"),
                    Contains("dataset-fashion-mnist") && Contains("--data-dir") && Contains("/nonexistent/fashion"));
}

TEST_CASE("Fashion-MNIST: the Debian files load with the right shapes", "[data][dataset]") {
  data::TensorDataset test = data::FashionMNIST::test();
  CHECK(test.images.sizes() == Shape{10000, 1, 28, 28});
  CHECK(test.labels.sizes() == Shape{10000});
  CHECK(test.labels.dtype() == DType::i64);
}
