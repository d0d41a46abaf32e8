// safetensors: round trips, atomic writes, a file written by tools/ in Python, and corrupt input.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "duet/duet.h"
#include "duet/nn/safetensors.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {
std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("duet-test-" + name)).string();
}
nn::SafeTensors parse(const std::string& bytes) {
  return nn::parse_safetensors(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "x.safetensors");
}
std::string with_header(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((json.size() >> (8 * i)) & 0xFF);
  return out + json + data;
}
}  // namespace

TEST_CASE("safetensors: every dtype round-trips, with metadata, and leaves no temp file", "[safetensors]") {
  std::string path = temp_path("roundtrip.safetensors");
  Tensor f = arange(0, 6).reshape({2, 3});
  Tensor d = from_vector<double>({1.5, -2.25});
  Tensor i = from_vector<int64_t>({7, -9, 11});
  Tensor u = from_vector<uint8_t>({255, 0});
  Tensor strided = arange(0, 6).reshape({2, 3}).t();  // written as its contiguous values
  nn::save_safetensors(path, {{"f", f}, {"d", d}, {"i", i}, {"u", u}, {"t", strided}}, {{"epoch", "3"}});
  nn::SafeTensors back = nn::load_safetensors(path);
  CHECK(back.metadata.at("epoch") == "3");
  CHECK(back.tensors.at("f").to_vector<float>() == f.to_vector<float>());
  CHECK(back.tensors.at("f").sizes() == Shape{2, 3});
  CHECK(back.tensors.at("d").to_vector<double>() == d.to_vector<double>());
  CHECK(back.tensors.at("i").to_vector<int64_t>() == i.to_vector<int64_t>());
  CHECK(back.tensors.at("u").to_vector<uint8_t>() == u.to_vector<uint8_t>());
  CHECK(back.tensors.at("t").to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path())) {
    CHECK(entry.path().string().find("roundtrip.safetensors.duet-partial-") == std::string::npos);
  }
  std::remove(path.c_str());
}

TEST_CASE("safetensors: a file written by tools/safetensors_np.py loads", "[safetensors]") {
  // tests/fuzz/corpus/safetensors/small.safetensors was written by the Python tool, which
  // implements the format independently of duet.
  nn::SafeTensors st = nn::load_safetensors(DUET_SOURCE_DIR "/tests/fuzz/corpus/safetensors/small.safetensors");
  CHECK(st.metadata.at("epoch") == "2");
  CHECK(st.tensors.at("w").sizes() == Shape{2, 3});
  CHECK(st.tensors.at("w").to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(st.tensors.at("step").to_vector<int64_t>() == std::vector<int64_t>{3});
}

TEST_CASE("safetensors: corrupt files are rejected with the field named", "[safetensors][errors]") {
  CHECK_THROWS_WITH(parse("abc"), Contains("too short"));
  CHECK_THROWS_WITH(parse(with_header("{", "")), Contains("not valid JSON"));
  CHECK_THROWS_WITH(parse(std::string("\xff\xff\xff\xff\0\0\0\0", 8)), Contains("does not fit"));
  CHECK_THROWS_WITH(parse(with_header(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})", "xx")),
                    Contains("'a'") && Contains("F16"));
  CHECK_THROWS_WITH(parse(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "xxxx")),
                    Contains("needs 8 bytes"));
  CHECK_THROWS_WITH(parse(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", "xxxx")),
                    Contains("outside"));
  CHECK_THROWS_WITH(parse(with_header(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", "xx")),
                    Contains("gap"));
  CHECK_THROWS_WITH(parse(with_header(R"({"a":{"dtype":"U8","shape":[1]}})", "x")), Contains("data_offsets"));
  CHECK_THROWS_WITH(nn::load_safetensors(temp_path("does-not-exist.safetensors")), Contains("cannot open"));
}

TEST_CASE("safetensors: a failed write names the path and leaves nothing behind", "[safetensors][errors]") {
  CHECK_THROWS_WITH(nn::save_safetensors("/nonexistent-dir/ckpt.safetensors", {{"w", ones({2})}}),
                    Contains("/nonexistent-dir/ckpt.safetensors") && Contains("cannot write"));
  // A directory in the way makes the final rename fail: the temporary file must be removed.
  std::string dir = temp_path("in-the-way");
  std::filesystem::create_directories(dir + "/occupied");
  CHECK_THROWS_WITH(nn::save_safetensors(dir, {{"w", ones({2})}}), Contains("cannot replace"));
  int leftovers = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path())) {
    leftovers += entry.path().filename().string().rfind("duet-test-in-the-way.duet-partial-", 0) == 0;
  }
  CHECK(leftovers == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("safetensors: a save removes the temporary files that killed writers left, and only those",
          "[safetensors][checkpoint]") {
  namespace fs = std::filesystem;
  const std::string dir = temp_path("partials");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = dir + "/ckpt.safetensors";
  // A process that has certainly ended: a child, waited for.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  const std::string dead = std::to_string(child), alive = std::to_string(::getppid());
  auto touch = [](const std::string& file) { std::ofstream(file) << "half a checkpoint"; };
  touch(path + ".duet-partial-" + dead);                   // killed mid-save
  touch(path + ".tmp." + dead);                            // the same, named as duet named them before
  touch(path + ".duet-partial-" + alive);                  // a save still running in another process
  touch(dir + "/other.safetensors.duet-partial-" + dead);  // another checkpoint's: not ours to judge
  touch(path + ".duet-partial-notapid");

  CHECK(nn::partial_path(path) == path + ".duet-partial-" + std::to_string(::getpid()));
  nn::save_safetensors(path, {{"w", ones({2})}});
  CHECK(fs::exists(path));
  CHECK_FALSE(fs::exists(path + ".duet-partial-" + dead));
  CHECK_FALSE(fs::exists(path + ".tmp." + dead));
  CHECK(fs::exists(path + ".duet-partial-" + alive));
  CHECK(fs::exists(dir + "/other.safetensors.duet-partial-" + dead));
  CHECK(fs::exists(path + ".duet-partial-notapid"));
  CHECK_FALSE(fs::exists(nn::partial_path(path)));
  fs::remove_all(dir);
}
