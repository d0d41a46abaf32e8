// Factories, random draws, from_vector, and printing.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "duet/duet.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {
using Values = std::vector<float>;
}

TEST_CASE("filled factories give contiguous tensors of the asked dtype and device", "[factory]") {
  Tensor z = zeros({2, 3});
  CHECK(z.dtype() == DType::f32);
  CHECK(z.device() == cpu());
  CHECK(z.is_contiguous());
  CHECK(z.strides() == Shape{3, 1});
  CHECK(z.to_vector<float>() == Values(6, 0));
  CHECK(ones({2}, {.dtype = DType::f64}).to_vector<double>() == std::vector<double>{1, 1});
  CHECK(full({3}, 2.5).to_vector<float>() == Values{2.5f, 2.5f, 2.5f});
  CHECK(full({}, 7, {.dtype = DType::i64}).item<int64_t>() == 7);
  CHECK(empty({4, 0}).numel() == 0);
  CHECK(zeros({2}, {.device = cpu(1)}).device() == cpu(1));
  Tensor leaf = zeros({2}, {.requires_grad = true});
  CHECK(leaf.requires_grad());
  CHECK(leaf.is_leaf());
  REQUIRE_THROWS_WITH(zeros({2}, {.dtype = DType::i64, .requires_grad = true}), Contains("floating"));
  REQUIRE_THROWS_WITH(empty({2, -1}), Contains("negative size"));
}

TEST_CASE("the _like factories copy shape, dtype and device", "[factory]") {
  Tensor x = full({2, 3}, 4, {.dtype = DType::f64, .device = cpu(2)}).t();
  for (const Tensor& y : {zeros_like(x), ones_like(x), empty_like(x)}) {
    CHECK(y.sizes() == Shape{3, 2});
    CHECK(y.dtype() == DType::f64);
    CHECK(y.device() == cpu(2));
    CHECK(y.is_contiguous());
  }
  CHECK(ones_like(x).to_vector<double>() == std::vector<double>(6, 1));
}

TEST_CASE("arange counts like torch.arange", "[factory]") {
  CHECK(arange(4).to_vector<float>() == Values{0, 1, 2, 3});
  CHECK(arange(1, 2, 0.25).to_vector<float>() == Values{1, 1.25f, 1.5f, 1.75f});
  CHECK(arange(5, 0, -2).to_vector<float>() == Values{5, 3, 1});
  CHECK(arange(3, 3).numel() == 0);
  CHECK(arange(3, {.dtype = DType::i64}).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2});
  REQUIRE_THROWS_WITH(arange(0, 1, 0), Contains("step must be non-zero"));
}

TEST_CASE("from_vector takes its dtype from the element type and checks the size", "[factory]") {
  Tensor f = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(f.sizes() == Shape{2, 3});
  CHECK(f.dtype() == DType::f32);
  CHECK(from_vector<double>({1, 2}).dtype() == DType::f64);
  CHECK(from_vector<int64_t>({1, 2}).dtype() == DType::i64);
  CHECK(from_vector<uint8_t>({1, 2}).dtype() == DType::u8);
  Tensor i = from_vector<int>({3, -4});
  CHECK(i.dtype() == DType::i64);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{3, -4});
  CHECK(from_vector<float>({1, 2}).sizes() == Shape{2});  // 1-D when no shape is given
  Tensor converted = from_vector<float>({1.5f, 2.5f}, {2}, {.dtype = DType::f64, .device = cpu(1)});
  CHECK(converted.dtype() == DType::f64);
  CHECK(converted.device() == cpu(1));
  CHECK(converted.to_vector<double>() == std::vector<double>{1.5, 2.5});
  REQUIRE_THROWS_WITH(from_vector<float>({1, 2, 3, 4, 5}, {2, 3}),
                      Contains("5 values") && Contains("[2, 3]") && Contains("6 elements"));
}

TEST_CASE("rand and randn are deterministic per seed and advance the generator", "[factory][random]") {
  Generator g1(42), g2(42), g3(43);
  Tensor a = rand({1000}, {}, &g1);
  Tensor b = rand({1000}, {}, &g2);
  Tensor c = rand({1000}, {}, &g3);
  CHECK(a.to_vector<float>() == b.to_vector<float>());
  CHECK(a.to_vector<float>() != c.to_vector<float>());
  CHECK(g1.offset() == 250);  // 1000 numbers, 4 per block
  CHECK(rand({1000}, {}, &g1).to_vector<float>() != a.to_vector<float>());
  for (float v : a.to_vector<float>()) {
    CHECK(v >= 0.0f);
    CHECK(v < 1.0f);
  }
  Generator n1(7), n2(7);
  CHECK(randn({5}, {}, &n1).to_vector<float>() == randn({5}, {}, &n2).to_vector<float>());
  CHECK(n1.offset() == 2);  // 5 normals use 6 numbers: two blocks
  manual_seed(3);
  Tensor d1 = randn({4});
  manual_seed(3);
  CHECK(randn({4}).to_vector<float>() == d1.to_vector<float>());
  REQUIRE_THROWS_WITH(rand({2}, {.dtype = DType::i64}), Contains("rand") && Contains("floating"));
}

TEST_CASE("randn has mean about 0 and std about 1", "[factory][random]") {
  Generator g(0);
  std::vector<double> v = randn({10000}, {.dtype = DType::f64}, &g).to_vector<double>();
  double mean = 0, square = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (double x : v) square += (x - mean) * (x - mean);
  double stddev = std::sqrt(square / static_cast<double>(v.size()));
  CHECK(std::fabs(mean) < 0.05);
  CHECK(std::fabs(stddev - 1) < 0.05);
  Generator u(0);
  std::vector<double> r = rand({10000}, {.dtype = DType::f64}, &u).to_vector<double>();
  double rmean = 0;
  for (double x : r) rmean += x;
  CHECK(std::fabs(rmean / 10000 - 0.5) < 0.02);
}

TEST_CASE("printing matches PyTorch", "[factory][print]") {
  CHECK(from_vector<float>({1, 2.5f, 3, 4}, {2, 2}).str() == "tensor([[1.0000, 2.5000],\n        [3.0000, 4.0000]])");
  CHECK(from_vector<float>({1, 2}).str() == "tensor([1., 2.])");
  CHECK(from_vector<float>({-1, 0, 10}).str() == "tensor([-1.,  0., 10.])");
  CHECK(scalar_like(3.5, zeros({1})).str() == "tensor(3.5000)");
  CHECK(from_vector<int64_t>({1, -20, 300}).str() == "tensor([  1, -20, 300])");
  CHECK(from_vector<uint8_t>({0, 255}).str() == "tensor([  0, 255], dtype=u8)");
  CHECK(from_vector<double>({0.5, 1}).str() == "tensor([0.5000, 1.0000], dtype=f64)");
  CHECK(from_vector<float>({1e-5f, 1}).str() == "tensor([1.0000e-05, 1.0000e+00])");
  CHECK(from_vector<float>({1, 1e9f}).str() == "tensor([1.0000e+00, 1.0000e+09])");
  CHECK(zeros({2}, {.device = cpu(1)}).str() == "tensor([0., 0.], device='cpu:1')");
  CHECK(zeros({0}).str() == "tensor([])");
  CHECK(zeros({2, 0}).str() == "tensor([], size=(2, 0))");
  CHECK(from_vector<float>({NAN, INFINITY, 1}).str() == "tensor([nan, inf, 1.])");
}

TEST_CASE("printing shows autograd state", "[factory][print]") {
  Tensor x = from_vector<float>({1, 2});
  x.requires_grad_();
  CHECK(x.str() == "tensor([1., 2.], requires_grad=True)");
  CHECK((x * x).str() == "tensor([1., 4.], grad_fn=<MulBackward>)");
  CHECK(sum(x).str() == "tensor(3., grad_fn=<SumBackward>)");
  std::ostringstream out;
  out << exp(x * 0.0);
  CHECK(out.str() == "tensor([1., 1.], grad_fn=<ExpBackward>)");
}

TEST_CASE("printing wraps long rows and summarises big tensors", "[factory][print]") {
  CHECK(arange(20).str() ==
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
        "        14., 15., 16., 17., 18., 19.])");
  CHECK(arange(2000, {.dtype = DType::i64}).str() == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  // Integral floats spanning more than 1000x switch to scientific notation, as in PyTorch.
  CHECK(arange(2000).str() ==
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
        "        1.9990e+03])");
  CHECK(arange(2000, {.dtype = DType::i64}).view({40, 50}).str() ==
        "tensor([[   0,    1,    2,  ...,   47,   48,   49],\n"
        "        [  50,   51,   52,  ...,   97,   98,   99],\n"
        "        [ 100,  101,  102,  ...,  147,  148,  149],\n"
        "        ...,\n"
        "        [1850, 1851, 1852,  ..., 1897, 1898, 1899],\n"
        "        [1900, 1901, 1902,  ..., 1947, 1948, 1949],\n"
        "        [1950, 1951, 1952,  ..., 1997, 1998, 1999]])");
  CHECK(arange(8).view({2, 2, 2}).str() ==
        "tensor([[[0., 1.],\n         [2., 3.]],\n\n        [[4., 5.],\n         [6., 7.]]])");
}
