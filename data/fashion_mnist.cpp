#include "duet/data/fashion_mnist.h"

#include <filesystem>

#include "duet/data/idx.h"

namespace duet::data {
namespace {

const std::array<const char*, 4> kStems = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                           "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

// `stem` with or without .gz, or nothing.
std::optional<std::string> existing_file(const std::string& dir, const std::string& stem) {
  namespace fs = std::filesystem;
  for (const std::string& name : {stem + ".gz", stem}) {
    if (fs::exists(fs::path(dir) / name)) return (fs::path(dir) / name).string();
  }
  return std::nullopt;
}

// A missing file names the package that provides it.
std::string find_file(const std::string& dir, const std::string& stem) {
  if (std::optional<std::string> path = existing_file(dir, stem)) return *path;
  DUET_FAIL("Fashion-MNIST not found: ", dir, " has no ", stem,
            "(.gz). Install Debian's "
            "dataset-fashion-mnist package (apt-get install dataset-fashion-mnist), or point "
            "--data-dir at a folder with the four IDX files");
}

TensorDataset load(const std::string& dir, const std::string& prefix) {
  std::string image_path = find_file(dir, prefix + "-images-idx3-ubyte");
  std::string label_path = find_file(dir, prefix + "-labels-idx1-ubyte");
  Tensor images = read_idx(image_path);
  Tensor labels = read_idx(label_path);
  DUET_CHECK(images.dtype() == DType::u8 && images.dim() == 3 && images.size(1) == 28 && images.size(2) == 28,
             image_path, ": expected u8 images of shape [N, 28, 28], got ", images.describe());
  DUET_CHECK(labels.dtype() == DType::u8 && labels.dim() == 1, label_path, ": expected u8 labels of shape [N], got ",
             labels.describe());
  DUET_CHECK(images.size(0) == labels.size(0), image_path, " holds ", images.size(0), " images but ", label_path,
             " holds ", labels.size(0), " labels");
  const uint8_t* raw = labels.data<uint8_t>();
  for (int64_t i = 0; i < labels.numel(); ++i) {
    DUET_CHECK(raw[i] < 10, label_path, ": label ", int(raw[i]), " at index ", i, " is outside the 10 classes");
  }
  return {images.reshape({images.size(0), 1, 28, 28}), labels.to(DType::i64)};
}

}  // namespace

TensorDataset FashionMNIST::train(const std::string& dir) { return load(dir, "train"); }
TensorDataset FashionMNIST::test(const std::string& dir) { return load(dir, "t10k"); }

std::optional<std::string> FashionMNIST::missing_file(const std::string& dir) {
  for (const char* stem : kStems) {
    if (!existing_file(dir, stem)) return std::string(stem);
  }
  return std::nullopt;
}

const std::array<const char*, 10> FashionMNIST::class_names = {"t-shirt", "trouser", "pullover", "dress", "coat",
                                                               "sandal",  "shirt",   "sneaker",  "bag",   "ankle boot"};

}  // namespace duet::data
