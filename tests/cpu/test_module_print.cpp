// Printing a module (`std::cout << *net`, Module::str()) gives PyTorch's print(net). Each
// expected text below is what torch 1.13 (Debian's python3-torch) printed for the same model
// built in PyTorch: the layers' extra_repr, the nesting, the indentation.
#include <catch2/catch.hpp>

#include <sstream>

#include "duet/duet.h"

using namespace duet;

namespace {

nn::Sequential lenet() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 6, 5).padding(2)), nn::Sigmoid(), nn::AvgPool2d(2),
                        nn::Conv2d(nn::Conv2dOptions(6, 16, 5)), nn::Sigmoid(), nn::AvgPool2d(2), nn::Flatten(),
                        nn::Linear(400, 120), nn::Sigmoid(), nn::Linear(120, 84), nn::Sigmoid(), nn::Linear(84, 10));
}

const char* const kLeNetBody = R"((
  (0): Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))
  (1): Sigmoid()
  (2): AvgPool2d(kernel_size=2, stride=2, padding=0)
  (3): Conv2d(6, 16, kernel_size=(5, 5), stride=(1, 1))
  (4): Sigmoid()
  (5): AvgPool2d(kernel_size=2, stride=2, padding=0)
  (6): Flatten(start_dim=1, end_dim=-1)
  (7): Linear(in_features=400, out_features=120, bias=True)
  (8): Sigmoid()
  (9): Linear(in_features=120, out_features=84, bias=True)
  (10): Sigmoid()
  (11): Linear(in_features=84, out_features=10, bias=True)
))";

// Modules of one's own, nested.
class Stem : public nn::Cloneable<Stem> {
 public:
  Stem() {
    features_ = register_module(
        "features", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(3, 4, 3).stride(2)), nn::BatchNorm2d(4), nn::Tanh()));
    head_ = register_module("head", nn::Linear(16, 5));
  }
  Tensor forward(const Tensor& x) override { return head_(features_(x).flatten(1)); }

 private:
  nn::Child<nn::Sequential> features_;
  nn::Child<nn::Linear> head_;
};

class Leaf : public nn::Cloneable<Leaf> {
 public:
  Tensor forward(const Tensor& x) override { return x; }
};

class Outer : public nn::Cloneable<Outer> {
 public:
  Outer() {
    stem_ = register_module("stem", std::make_shared<Stem>());
    leaf_ = register_module("leaf", std::make_shared<Leaf>());
    empty_ = register_module("empty", nn::Sequential());
  }
  Tensor forward(const Tensor& x) override { return empty_(leaf_(stem_(x))); }

 private:
  nn::Child<Stem> stem_;
  nn::Child<Leaf> leaf_;
  nn::Child<nn::Sequential> empty_;
};

// Settings of its own, printed before its children, as PyTorch's extra_repr.
class Scaled : public nn::Cloneable<Scaled> {
 public:
  Scaled() { fc_ = register_module("fc", nn::Linear(2, 2)); }
  Tensor forward(const Tensor& x) override { return fc_(x) * 2.0; }
  std::string extra_repr() const override { return "scale=2.0"; }

 private:
  nn::Child<nn::Linear> fc_;
};

class TwoLines : public nn::Cloneable<TwoLines> {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  std::string extra_repr() const override { return "first=1\nsecond=2"; }
};

std::string printed(const nn::Module& module) {
  std::ostringstream out;
  out << module;
  return out.str();
}

}  // namespace

TEST_CASE("std::cout << *net prints LeNet as PyTorch's print(net)", "[nn][module][print]") {
  std::shared_ptr<nn::Module> net = lenet();
  CHECK(printed(*net) == std::string("Sequential") + kLeNetBody);
  // The bundled LeNet is the same layers in a FusedSequential, which has no PyTorch twin.
  CHECK(printed(*nn::models::make("lenet")) == std::string("FusedSequential") + kLeNetBody);
}

TEST_CASE("a module of one's own prints its name and its children's trees", "[nn][module][print]") {
  CHECK(printed(Outer()) == R"(Outer(
  (stem): Stem(
    (features): Sequential(
      (0): Conv2d(3, 4, kernel_size=(3, 3), stride=(2, 2))
      (1): BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
      (2): Tanh()
    )
    (head): Linear(in_features=16, out_features=5, bias=True)
  )
  (leaf): Leaf()
  (empty): Sequential()
))");
  CHECK(printed(Scaled()) == R"(Scaled(
  scale=2.0
  (fc): Linear(in_features=2, out_features=2, bias=True)
))");
  CHECK(printed(TwoLines()) == "TwoLines(\n  first=1\n  second=2\n)");
}

TEST_CASE("each bundled layer prints PyTorch's extra_repr", "[nn][module][print]") {
  nn::Sequential gallery(
      nn::BatchNorm2d(6), nn::BatchNorm2d(6, nn::BatchNormOptions{.momentum = std::nullopt, .eps = 1e-3}),
      nn::Dropout(0.5), nn::Dropout(0.25), nn::ReLU(), nn::Tanh(), nn::MaxPool2d(2),
      nn::MaxPool2d(nn::MaxPool2dOptions({3, 2}).stride({2, 1}).padding(1).ceil_mode(true).dilation(2)),
      nn::AvgPool2d(
          nn::AvgPool2dOptions(3).stride(2).padding(1).ceil_mode(true).count_include_pad(false).divisor_override(3)),
      nn::AdaptiveAvgPool2d(1), nn::AdaptiveMaxPool2d(PerAxis{2, 3}),
      nn::Conv2d(nn::Conv2dOptions(8, 8, {3, 1}).stride({2, 1}).dilation(2).groups(8).bias(false)),
      nn::Linear(3, 2, /*bias=*/false), nn::Flatten(0, 2));
  CHECK(printed(*gallery) == R"(Sequential(
  (0): BatchNorm2d(6, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
  (1): BatchNorm2d(6, eps=0.001, momentum=None, affine=True, track_running_stats=True)
  (2): Dropout(p=0.5, inplace=False)
  (3): Dropout(p=0.25, inplace=False)
  (4): ReLU()
  (5): Tanh()
  (6): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
  (7): MaxPool2d(kernel_size=(3, 2), stride=(2, 1), padding=1, dilation=2, ceil_mode=True)
  (8): AvgPool2d(kernel_size=3, stride=2, padding=1)
  (9): AdaptiveAvgPool2d(output_size=1)
  (10): AdaptiveMaxPool2d(output_size=(2, 3))
  (11): Conv2d(8, 8, kernel_size=(3, 1), stride=(2, 1), dilation=(2, 2), groups=8, bias=False)
  (12): Linear(in_features=3, out_features=2, bias=False)
  (13): Flatten(start_dim=0, end_dim=2)
))");
}
