// The CPU matmul (2-D and batched, on strided and broadcast operands), called directly (no
// autograd), against hand values and a naive triple loop.
#include <catch2/catch.hpp>

#include <array>
#include <vector>

#include "duet/kernels/cpu/gemm.h"
#include "duet/kernels/kernels.h"
#include "kernel_test_tensors.h"

using namespace duet;
using namespace duet::kernels;
using namespace duet::kernel_test;
using Catch::Matchers::Contains;

namespace {

// [batch, m, n] = [batch, m, k] @ [batch, k, n] by the textbook triple loop, over strided views.
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b) {
  std::vector<double> av = values<double>(a), bv = values<double>(b);
  const size_t r = a.sizes().size();
  int64_t batch = r == 3 ? a.sizes()[0] : 1, m = a.sizes()[r - 2], k = a.sizes()[r - 1], n = b.sizes()[r - 1];
  std::vector<double> out(static_cast<size_t>(batch * m * n), 0.0);
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q)
          s += av[static_cast<size_t>((p * m + i) * k + q)] * bv[static_cast<size_t>((p * k + q) * n + j)];
        out[static_cast<size_t>((p * m + i) * n + j)] = s;
      }
  return out;
}

Tensor random_f64(Shape sizes, uint64_t seed) {
  Tensor t = empty_tensor(DType::f64, std::move(sizes));
  uniform(t, seed, 0, -1.0, 1.0);
  return t;
}

}  // namespace

TEST_CASE("matmul 2-D against hand values and a naive loop", "[kernels]") {
  Tensor a = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor out = empty_tensor(DType::f32, {2, 2});
  matmul(a, b, out);
  CHECK(values<float>(out) == std::vector<float>{58, 64, 139, 154});

  // Transposed operands and a transposed out, each read or written without a copy.
  Tensor at_buf = random_f64({5, 4}, 1), bt_buf = random_f64({6, 5}, 2);
  Tensor at = transposed(at_buf), bt = transposed(bt_buf);  // [4,5] and [5,6]
  Tensor out_buf = empty_tensor(DType::f64, {6, 4});
  matmul(at, bt, transposed(out_buf));
  check_close(values<double>(transposed(out_buf)), naive_matmul(at, bt), 1e-12);

  // A layout BLAS cannot read (no unit stride) goes through a contiguous copy.
  Tensor wide = random_f64({4, 10}, 3);
  Tensor every_other = wide.as_strided({4, 5}, {10, 2}, 0);
  Tensor b2 = random_f64({5, 3}, 4);
  Tensor o2 = empty_tensor(DType::f64, {4, 3});
  matmul(every_other, b2, o2);
  check_close(values<double>(o2), naive_matmul(every_other, b2), 1e-12);
  Tensor o2_buf = empty_tensor(DType::f64, {4, 6});
  matmul(every_other, b2, o2_buf.as_strided({4, 3}, {6, 2}, 1));  // strided out: copied back
  check_close(values<double>(o2_buf.as_strided({4, 3}, {6, 2}, 1)), naive_matmul(every_other, b2), 1e-12);
}

TEST_CASE("matmul splits a large GEMM along c's longer side, every transpose", "[kernels]") {
  // {203, 64, 97}: c split by rows; {10, 300, 203}: by columns (mlp's [10, 256] weight gradient).
  // A column-major c is computed as c^T, whose rows are c's columns.
  const std::array<std::array<int64_t, 3>, 2> shapes{{{203, 64, 97}, {10, 300, 203}}};
  for (auto [m, k, n] : shapes)
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (bool tc : {false, true}) {
          CAPTURE(m, k, n, ta, tb, tc);
          Tensor a_store = random_f64(ta ? Shape{k, m} : Shape{m, k}, 5);
          Tensor b_store = random_f64(tb ? Shape{n, k} : Shape{k, n}, 6);
          Tensor a = ta ? transposed(a_store) : a_store, b = tb ? transposed(b_store) : b_store;
          Tensor c_store = empty_tensor(DType::f64, tc ? Shape{n, m} : Shape{m, n});
          Tensor c = tc ? transposed(c_store) : c_store;
          matmul(a, b, c);
          check_close(values<double>(c), naive_matmul(a, b), 1e-12);
        }
}

TEST_CASE("batched matmul, with transposed and broadcast operands", "[kernels]") {
  Tensor a = random_f64({3, 4, 5}, 7), b = random_f64({3, 5, 2}, 8);
  Tensor out = empty_tensor(DType::f64, {3, 4, 2});
  matmul(a, b, out);
  check_close(values<double>(out), naive_matmul(a, b), 1e-12);

  Tensor bt_buf = random_f64({3, 2, 5}, 9);
  matmul(a, transposed(bt_buf), out);
  check_close(values<double>(out), naive_matmul(a, transposed(bt_buf)), 1e-12);

  Tensor shared = random_f64({5, 2}, 10);  // one b for every batch item (batch stride 0)
  Tensor expanded = shared.as_strided({3, 5, 2}, {0, 2, 1}, 0);
  matmul(a, expanded, out);
  check_close(values<double>(out), naive_matmul(a, expanded), 1e-12);

  Tensor f = make<float>({1, 1, 2}, {1, 2}), g = make<float>({1, 2, 1}, {3, 4});
  Tensor fo = empty_tensor(DType::f32, {1, 1, 1});
  matmul(f, g, fo);
  CHECK(values<float>(fo) == std::vector<float>{11});
  Tensor i = make<int64_t>({1, 1}, {1});
  REQUIRE_THROWS_WITH(matmul(i, i, empty_tensor(DType::i64, {1, 1})), Contains("matmul"));
  REQUIRE_THROWS_WITH(matmul(a, a, out), Contains("matmul") && Contains("f64[3, 4, 5]"));
}

TEST_CASE("matmul with k = 0 writes zeros", "[kernels]") {
  Tensor a = empty_tensor(DType::f32, {2, 0}), b = empty_tensor(DType::f32, {0, 3});
  Tensor out = make<float>({2, 3}, std::vector<float>(6, 9));
  matmul(a, b, out);
  CHECK(values<float>(out) == std::vector<float>(6, 0));
}

TEST_CASE("f32 matmul on duet's own GEMM (PackedPanels) matches the naive loop, every transpose", "[kernels]") {
  // Odd shapes: rows not a multiple of the 6-row block, columns not a multiple of the 16-lane
  // vector or the 64-column panel, and both operands as they are or transposed. On two threads
  // or more, {256, 17, 800} splits c by rows (one panel), {64, 200, 300} by panels. Narrow c
  // has narrow panels: one vector for {256, 10, 256} (mlp's last layer), two for {256, 17, 800}.
  const std::vector<std::array<int64_t, 3>> shapes = {{29, 37, 300}, {100, 70, 64},  {256, 17, 800},
                                                      {25, 130, 91}, {64, 200, 300}, {256, 10, 256}};
  for (const auto& [m, n, k] : shapes) {
    REQUIRE(cpu::PackedPanels<float>::pays(m, n, k));
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        INFO("m " << m << " n " << n << " k " << k << " transposed a " << ta << " b " << tb);
        // f32 storage in the layout asked for; the naive loop reads the same values.
        Tensor a_store = empty_tensor(DType::f32, ta ? Shape{k, m} : Shape{m, k});
        Tensor b_store = empty_tensor(DType::f32, tb ? Shape{n, k} : Shape{k, n});
        copy(random_f64(a_store.sizes(), 11), a_store);
        copy(random_f64(b_store.sizes(), 12), b_store);
        Tensor a = ta ? transposed(a_store) : a_store, b = tb ? transposed(b_store) : b_store;
        Tensor out = empty_tensor(DType::f32, {m, n});
        fill(out, 7.0);  // overwritten, not added to
        matmul(a, b, out);
        Tensor a64 = empty_tensor(DType::f64, {m, k}), b64 = empty_tensor(DType::f64, {k, n});
        copy(a, a64);
        copy(b, b64);
        check_close(values<float>(out), naive_matmul(a64, b64), 1e-4);
      }
    }
  }
}
