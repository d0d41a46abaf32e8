#include "constant_rows.h"

#include <catch2/catch.hpp>

#include <functional>
#include <utility>
#include <vector>

#include "duet/duet.h"

namespace duet::test {
namespace {

// Every value of t, as doubles (t on any device, of a floating dtype).
std::vector<double> values(const Tensor& t) { return t.to(cpu()).to(DType::f64).to_vector<double>(); }

bool all_zero(const Tensor& t) {
  for (double v : values(t)) {
    if (v != 0) return false;  // NaN too
  }
  return true;
}

// A fresh leaf and the tensor made from it whose rows are reduced.
using MakeRows = std::function<std::pair<Tensor, Tensor>()>;

// var or std of the rows over dims, then its gradient with respect to their leaf.
void check_zero(const char* what, const MakeRows& make, const std::vector<int64_t>& dims) {
  for (bool unbiased : {true, false}) {
    for (bool is_std : {false, true}) {
      INFO(what << (is_std ? " std" : " var") << (unbiased ? " unbiased" : " biased") << " over " << dims.size()
                << " dim(s)");
      const auto [leaf, x] = make();
      const Tensor spread = is_std ? duet::std(x, dims, unbiased) : var(x, dims, unbiased);
      CHECK(all_zero(spread));
      sum(spread * 3.0).backward();
      REQUIRE(leaf.grad().defined());
      CHECK(all_zero(leaf.grad()));
    }
  }
}

}  // namespace

void check_constant_rows_spread(Device device) {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (double value : {0.1, 1.0 / 3, -7.3, 1e10 + 0.3, 2.5e-7}) {
      INFO(dtype_name(dtype) << " rows of " << value);
      const TensorOptions options{.dtype = dtype, .device = device};
      auto filled = [&](Shape shape) {
        return [=] {
          Tensor x = full(shape, value, options);
          x.requires_grad_();
          return std::pair{x, x};
        };
      };
      check_zero("full", filled({4, 6}), {1});
      check_zero("full", filled({3, 6, 5}), {0, 2});
      // Rows made by expand read one element through stride 0.
      check_zero("expanded",
                 [&] {
                   Tensor column = from_vector<double>({value, -value, value * 3}, {3, 1}).to(dtype).to(device);
                   column.requires_grad_();
                   return std::pair{column, column.expand({3, 7})};
                 },
                 {1});
    }
  }
}

}  // namespace duet::test
