// The kernel profiler behind `duet train --profile`.
#include <catch2/catch.hpp>

#include <algorithm>

#include "duet/duet.h"
#include "duet/kernels/profiler.h"

using namespace duet;
namespace profiler = kernels::profiler;

namespace {

const profiler::OpTime* find(const std::vector<profiler::OpTime>& ops, const std::string& op) {
  auto it = std::find_if(ops.begin(), ops.end(), [&](const profiler::OpTime& t) { return t.op == op; });
  return it == ops.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("the kernel profiler counts the outermost kernels while it is on", "[profiler]") {
  profiler::take();
  Tensor a = randn({64, 32}).requires_grad_();
  Tensor b = randn({32, 16});
  matmul(a, b);  // off: not counted
  CHECK(profiler::take().empty());

  profiler::set_enabled(true);
  Tensor loss = sum(sigmoid(matmul(a, b)));
  loss.backward();
  matmul(a.t().contiguous().t(), b);  // a transposed layout: matmul's own copies are not counted
  profiler::set_enabled(false);

  std::vector<profiler::OpTime> ops = profiler::take();
  REQUIRE(find(ops, "matmul"));
  CHECK(find(ops, "matmul")->calls == 3);  // two forwards and the backward's grad_a
  REQUIRE(find(ops, "sigmoid"));
  CHECK(find(ops, "sigmoid")->calls == 1);
  REQUIRE(find(ops, "sigmoid backward"));
  CHECK(find(ops, "sigmoid backward")->calls == 1);
  for (size_t i = 1; i < ops.size(); ++i) CHECK(ops[i - 1].seconds >= ops[i].seconds);  // longest first
  CHECK(profiler::take().empty());  // take() starts the totals again

  std::vector<profiler::OpTime> total = {{"matmul", 2, 1.0}};
  profiler::accumulate(total, {{"matmul", 1, 0.5}, {"add", 4, 2.0}});
  REQUIRE(total.size() == 2);
  CHECK(total[0].op == "add");
  CHECK(total[1].calls == 3);
  CHECK(total[1].seconds == Approx(1.5));
}
