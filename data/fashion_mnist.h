// Fashion-MNIST (Xiao et al. 2017): 60,000 training and 10,000 test images, 28x28 grey,
// 10 classes. The files come from Debian's dataset-fashion-mnist package by default.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "duet/data/dataset.h"

namespace duet::data {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct FashionMNIST {
  // images u8 [N, 1, 28, 28], labels i64 [N]. `dir` holds the four IDX files, gzipped or not.
  static TensorDataset train(const std::string& dir = kFashionMnistDir);
  static TensorDataset test(const std::string& dir = kFashionMnistDir);
  // The first of the four files that `dir` lacks (its name without .gz), or nothing when all
  // are there: lets a test skip, rather than fail, on a machine without the dataset.
  static std::optional<std::string> missing_file(const std::string& dir = kFashionMnistDir);
  static const std::array<const char*, 10> class_names;
};

}  // namespace duet::data
