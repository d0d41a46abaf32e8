// The differentiable communication ops of strategy A (scatter, gather, broadcast, reduce_add)
// on logical CPU devices: values, shapes and devices, replica 0's identity, gradcheck, the
// bytes they count, and a DataParallel-style step against single-device training.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>

#include "duet/duet.h"
#include "duet/parallel/transfers.h"

using namespace duet;
using Catch::Matchers::Contains;
using parallel::comm_counter;

namespace {

using Inputs = std::vector<Tensor>;

std::vector<Device> cpus(int n) {
  std::vector<Device> devices;
  for (int i = 0; i < n; ++i) devices.push_back(cpu(i));
  return devices;
}

// An f64 [rows, cols] tensor holding 0, 1, 2, ... (so every row is recognisable).
Tensor counting(int64_t rows, int64_t cols = 3) {
  NoGradGuard no_grad;
  return arange(static_cast<double>(rows * cols), {.dtype = DType::f64}).reshape({rows, cols});
}

Tensor random_leaf(Shape shape, uint64_t seed) {
  Generator g(seed);
  Tensor t = randn(std::move(shape), {.dtype = DType::f64}, &g);
  t.requires_grad_();
  return t;
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = values(a), y = values(b);
  REQUIRE(x.size() == y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  return worst;
}

// Everything on cpu:0 joined into one tensor, so gradcheck sees one output.
Tensor joined_on_cpu0(const std::vector<Tensor>& parts) {
  std::vector<Tensor> flat;
  for (const Tensor& part : parts) flat.push_back(part.to(cpu(0)).flatten());
  return cat(flat);
}

void check_gradient(const std::function<Tensor(const Inputs&)>& fn, const Inputs& inputs) {
  GradcheckResult result = gradcheck(fn, inputs);
  INFO(result.message);
  CHECK(result.ok);
}

}  // namespace

TEST_CASE("chunk_sizes follows torch.chunk, which DataParallel's scatter uses", "[parallel]") {
  using Sizes = std::vector<int64_t>;
  // Expected values printed by PyTorch 1.13: [c.shape[0] for c in torch.arange(b).chunk(d)].
  CHECK(parallel::chunk_sizes(5, 4) == Sizes{2, 2, 1});
  CHECK(parallel::chunk_sizes(2, 3) == Sizes{1, 1});
  CHECK(parallel::chunk_sizes(6, 4) == Sizes{2, 2, 2});
  CHECK(parallel::chunk_sizes(10, 4) == Sizes{3, 3, 3, 1});
  CHECK(parallel::chunk_sizes(7, 3) == Sizes{3, 3, 1});
  CHECK(parallel::chunk_sizes(8, 3) == Sizes{3, 3, 2});
  CHECK(parallel::chunk_sizes(9, 4) == Sizes{3, 3, 3});
  CHECK(parallel::chunk_sizes(1, 4) == Sizes{1});
  CHECK(parallel::chunk_sizes(0, 2) == Sizes{0, 0});
  CHECK(parallel::chunk_sizes(256, 1) == Sizes{256});
  CHECK(parallel::chunk_sizes(256, 3) == Sizes{86, 86, 84});
  CHECK_THROWS_WITH(parallel::chunk_sizes(4, 0), Contains("positive"));
}

TEST_CASE("scatter splits a batch over the devices, fewer when it is small", "[parallel]") {
  for (int n = 1; n <= 4; ++n) {
    for (int64_t batch : {8, 7, 5, 3, 2, 1}) {
      INFO("batch " << batch << " over " << n << " devices");
      Tensor x = counting(batch);
      std::vector<Tensor> chunks = parallel::scatter(x, cpus(n));
      std::vector<int64_t> rows = parallel::chunk_sizes(batch, n);
      REQUIRE(chunks.size() == rows.size());
      CHECK(chunks.size() <= static_cast<size_t>(n));
      for (size_t k = 0; k < chunks.size(); ++k) {
        CHECK(chunks[k].device() == cpu(static_cast<int>(k)));
        CHECK(chunks[k].sizes() == Shape{rows[k], 3});
      }
      CHECK(values(joined_on_cpu0(chunks)) == values(x));
      CHECK(chunks[0].storage() == x.storage());  // x's own device: a view, not a copy
      CHECK_FALSE(chunks[0].requires_grad());     // x needs no grad: no node
    }
  }
}

TEST_CASE("scatter records one node for all chunks", "[parallel]") {
  Tensor x = random_leaf({5, 2}, 1);
  std::vector<Tensor> chunks = parallel::scatter(x, cpus(4));
  REQUIRE(chunks.size() == 3);
  for (const Tensor& chunk : chunks) {
    CHECK(chunk.requires_grad());
    CHECK(chunk.grad_fn() == chunks[0].grad_fn());
  }
  CHECK(chunks[0].grad_fn()->name() == "ScatterBackward");
  CHECK(chunks[0].grad_fn()->device() == cpu(0));  // backward collects onto x's device
  CHECK_THROWS_WITH(parallel::scatter(x, {}), Contains("no devices"));
  CHECK_THROWS_WITH(parallel::scatter(scalar_like(1.0, x), cpus(2)), Contains("0-d"));
}

TEST_CASE("gather joins parts from several devices onto the target", "[parallel]") {
  std::vector<Tensor> parts = {counting(2).to(cpu(1)), counting(3).to(cpu(2)), counting(1).to(cpu(0))};
  for (int target = 0; target < 3; ++target) {
    Tensor out = parallel::gather(parts, cpu(target));
    CHECK(out.device() == cpu(target));
    CHECK(out.sizes() == Shape{6, 3});
    std::vector<double> expected;
    for (const Tensor& part : parts) {
      for (double v : values(part)) expected.push_back(v);
    }
    CHECK(values(out) == expected);
  }
  CHECK_THROWS_WITH(parallel::gather({counting(2), counting(2, 4)}, cpu(0)), Contains("tensor 1"));
  CHECK_THROWS_WITH(parallel::gather({}, cpu(0)), Contains("no tensors"));
}

TEST_CASE("broadcast copies a list of tensors, and replica 0 is the master itself", "[parallel]") {
  Tensor w = random_leaf({3, 2}, 2);
  Tensor b = random_leaf({2}, 3);
  Tensor buffer = counting(1, 2);  // like running stats: needs no grad
  for (int n = 1; n <= 4; ++n) {
    auto replicas = parallel::broadcast({w, b, buffer}, cpus(n));
    REQUIRE(replicas.size() == static_cast<size_t>(n));
    CHECK(replicas[0][0].is_same(w));
    CHECK(replicas[0][1].is_same(b));
    CHECK(replicas[0][2].is_same(buffer));
    for (int d = 1; d < n; ++d) {
      REQUIRE(replicas[d].size() == 3);
      for (size_t i = 0; i < 3; ++i) {
        CHECK(replicas[d][i].device() == cpu(d));
        CHECK(values(replicas[d][i]) == values(replicas[0][i]));
        CHECK(replicas[d][i].storage() != replicas[0][i].storage());
      }
      CHECK(replicas[d][0].grad_fn()->name() == "BroadcastBackward");
      CHECK(replicas[d][0].grad_fn() == replicas[1][1].grad_fn());  // one node for everything
      CHECK_FALSE(replicas[d][2].requires_grad());                  // a buffer's copy is plain
    }
  }
  // A device list without the source: every result is a copy.
  auto elsewhere = parallel::broadcast({w}, {cpu(2), cpu(3)});
  CHECK(elsewhere[0][0].device() == cpu(2));
  CHECK_FALSE(elsewhere[0][0].is_same(w));
  auto nothing = parallel::broadcast({}, cpus(2));
  CHECK((nothing.size() == 2 && nothing[0].empty() && nothing[1].empty()));
  CHECK_THROWS_WITH(parallel::broadcast({w, b.to(cpu(1))}, cpus(2)), Contains("different devices"));
}

TEST_CASE("reduce_add sums each tensor over the devices onto the target", "[parallel]") {
  std::vector<std::vector<Tensor>> per_device;
  for (int d = 0; d < 3; ++d) {
    NoGradGuard no_grad;
    per_device.push_back({(counting(2) * (d + 1.0)).to(cpu(d)), full({4}, d + 0.5, {.dtype = DType::f64}).to(cpu(d))});
  }
  std::vector<Tensor> sums = parallel::reduce_add(per_device, cpu(1));
  REQUIRE(sums.size() == 2);
  CHECK(sums[0].device() == cpu(1));
  CHECK(values(sums[0]) == values(counting(2) * 6.0));
  CHECK(values(sums[1]) == std::vector<double>(4, 4.5));
  // A single term on the target is returned without a copy, and is never written into.
  std::vector<Tensor> alone = parallel::reduce_add({{per_device[1][0]}}, cpu(1));
  CHECK(values(alone[0]) == values(per_device[1][0]));
  CHECK_THROWS_WITH(parallel::reduce_add({{counting(2)}, {counting(3)}}, cpu(0)), Contains("list 1"));
  CHECK_THROWS_WITH(parallel::reduce_add({{counting(2)}, {}}, cpu(0)), Contains("holds 0"));
}

TEST_CASE("gradcheck: scatter, also with uneven and missing chunk gradients", "[parallel][gradcheck]") {
  for (int n = 1; n <= 4; ++n) {
    for (int64_t batch : {7, 4, 2}) {
      INFO("batch " << batch << " over " << n << " devices");
      // Each chunk weighted differently, so a chunk routed to the wrong rows would show.
      check_gradient(
          [n](const Inputs& x) {
            std::vector<Tensor> chunks = parallel::scatter(x[0], cpus(n));
            for (size_t k = 0; k < chunks.size(); ++k) chunks[k] = chunks[k] * (k + 1.0);
            return joined_on_cpu0(chunks);
          },
          {random_leaf({batch, 3}, 10 + static_cast<uint64_t>(batch))});
      // Only the last chunk is used: the others get no gradient, which must count as zeros.
      check_gradient([n](const Inputs& x) { return parallel::scatter(x[0], cpus(n)).back().to(cpu(0)); },
                     {random_leaf({batch, 2}, 20)});
    }
  }
}

TEST_CASE("gradcheck: gather", "[parallel][gradcheck]") {
  for (int n = 1; n <= 4; ++n) {
    INFO(n << " parts");
    Inputs parts;
    for (int k = 0; k < n; ++k) parts.push_back(random_leaf({k + 1, 2}, 30 + static_cast<uint64_t>(k)));
    check_gradient(
        [n](const Inputs& x) {
          std::vector<Tensor> placed;
          for (int k = 0; k < n; ++k) placed.push_back(x[static_cast<size_t>(k)].to(cpu(k)));
          return parallel::gather(placed, cpu(n - 1)).to(cpu(0));
        },
        parts);
  }
}

TEST_CASE("gradcheck: broadcast reduce-adds the copies' gradients onto the master", "[parallel][gradcheck]") {
  for (int n = 1; n <= 4; ++n) {
    INFO(n << " devices");
    check_gradient(
        [n](const Inputs& x) {
          auto replicas = parallel::broadcast(x, cpus(n));
          std::vector<Tensor> used;  // replica d contributes (d + 1) * tensor, so every copy counts
          for (int d = 0; d < n; ++d) {
            for (const Tensor& t : replicas[static_cast<size_t>(d)]) used.push_back(t * (d + 1.0));
          }
          return joined_on_cpu0(used);
        },
        {random_leaf({2, 3}, 40), random_leaf({4}, 41)});
  }
}

TEST_CASE("gradcheck: reduce_add", "[parallel][gradcheck]") {
  for (int n = 1; n <= 4; ++n) {
    INFO(n << " devices");
    Inputs leaves;  // leaves[2 * d + i] is tensor i of device d
    for (int d = 0; d < n; ++d) {
      leaves.push_back(random_leaf({2, 2}, 50 + static_cast<uint64_t>(d)));
      leaves.push_back(random_leaf({3}, 60 + static_cast<uint64_t>(d)));
    }
    check_gradient(
        [n](const Inputs& x) {
          std::vector<std::vector<Tensor>> per_device;
          for (int d = 0; d < n; ++d) {
            per_device.push_back(
                {x[static_cast<size_t>(2 * d)].to(cpu(d)) * (d + 1.0), x[static_cast<size_t>(2 * d + 1)].to(cpu(d))});
          }
          return joined_on_cpu0(parallel::reduce_add(per_device, cpu(n - 1)));
        },
        leaves);
  }
}

TEST_CASE("the ops count the bytes they move between devices, forward and backward", "[parallel]") {
  Tensor x = random_leaf({5, 3}, 70);  // 8 bytes an element
  comm_counter().reset();
  std::vector<Tensor> chunks = parallel::scatter(x, cpus(4));  // rows 2 | 2 | 1; the first stays
  CHECK(comm_counter().bytes_moved() == (2 + 1) * 3 * 8);
  comm_counter().reset();
  Tensor y = parallel::gather(chunks, cpu(0));  // the same rows come back
  CHECK(comm_counter().bytes_moved() == (2 + 1) * 3 * 8);
  comm_counter().reset();
  sum(y).backward();  // gather's backward sends them out, scatter's brings them home
  CHECK(comm_counter().bytes_moved() == 2 * (2 + 1) * 3 * 8);
  CHECK(values(x.grad()) == std::vector<double>(15, 1.0));

  Tensor w = random_leaf({4, 4}, 71);
  Tensor b = random_leaf({4}, 72);
  comm_counter().reset();
  auto replicas = parallel::broadcast({w, b}, cpus(3));  // two copies of 20 elements
  CHECK(comm_counter().bytes_moved() == 2 * 20 * 8);
  CHECK(comm_counter().messages() == 2);  // w and b coalesced: one message per device
  std::vector<Tensor> terms;
  for (const auto& replica : replicas) terms.push_back(sum(replica[0]).to(cpu(0)) + sum(replica[1]).to(cpu(0)));
  Tensor total = terms[0] + terms[1] + terms[2];
  comm_counter().reset();
  total.backward();  // two copies' gradients come home (Tensor::to is no comm op: not counted)
  CHECK(comm_counter().bytes_moved() == 2 * 20 * 8);
  CHECK(comm_counter().messages() == 2);
  CHECK(values(w.grad()) == std::vector<double>(16, 3.0));

  comm_counter().reset();
  parallel::reduce_add({{w.detach()}, {w.detach().to(cpu(1))}, {w.detach().to(cpu(2))}}, cpu(0));
  CHECK(comm_counter().messages() == 2);
  CHECK(comm_counter().reset() == 2 * 16 * 8);  // reset() returns the count it ends
  CHECK(comm_counter().bytes_moved() == 0);
  CHECK(comm_counter().messages() == 0);
}

TEST_CASE("coalesced transfers: one message per device, dtype, kind and 10 MiB buffer", "[parallel]") {
  using parallel::transfers::coalesced_groups;
  using Groups = std::vector<std::vector<size_t>>;
  const Tensor f = zeros({4}), d = zeros({4}, {.dtype = DType::f64}), elsewhere = zeros({4}).to(cpu(1));
  CHECK(coalesced_groups({f, d, f, Tensor(), d, elsewhere}) == Groups{{0, 2}, {1, 4}, {5}});
  // A group closes before the tensor that would take it past the cap; a larger one goes alone.
  CHECK(coalesced_groups({f, f, f, f}, 32) == Groups{{0, 1}, {2, 3}});
  CHECK(coalesced_groups({f, zeros({100}), f}, 32) == Groups{{0}, {1}, {2}});
  CHECK(coalesced_groups({}).empty());
  Tensor needs_grad = zeros({4});
  needs_grad.requires_grad_();
  CHECK(coalesced_groups({f, needs_grad, f}) == Groups{{0, 2}, {1}});  // parameters apart from buffers

  // Values arrive intact as views of one buffer, strided sources included; what is already on
  // the target is not moved.
  Tensor a = arange(6.0).reshape({2, 3}), b = arange(4.0, {.dtype = DType::f64}), c = arange(6.0).reshape({3, 2}).t();
  comm_counter().reset();
  std::vector<Tensor> moved = parallel::transfers::moved_coalesced({a, Tensor(), b, c, a.to(cpu(1))}, cpu(1));
  CHECK(comm_counter().messages() == 2);  // a and c (f32) together, b (f64) alone
  CHECK(comm_counter().bytes_moved() == (6 + 6) * 4 + 4 * 8);
  CHECK_FALSE(moved[1].defined());
  for (size_t i : {0, 2, 3, 4}) {
    CHECK(moved[i].device() == cpu(1));
    CHECK(moved[i].sizes() == std::vector<Tensor>{a, Tensor(), b, c, a}[i].sizes());
  }
  CHECK(moved[0].to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(moved[3].to_vector<float>() == std::vector<float>{0, 2, 4, 1, 3, 5});
  CHECK(moved[2].to_vector<double>() == std::vector<double>{0, 1, 2, 3});
  CHECK(moved[0].storage() == moved[3].storage());
}

TEST_CASE("a DataParallel-style step gives single-device gradients", "[parallel]") {
  // tanh(x @ w + b), loss = mean of squares, on a batch of 7 over 1..4 devices.
  Tensor w = random_leaf({3, 4}, 80);
  Tensor b = random_leaf({4}, 81);
  Tensor x;
  {
    Generator g(82);
    x = randn({7, 3}, {.dtype = DType::f64}, &g);
  }
  auto loss_of = [](const Tensor& out) { return sum(out * out) / static_cast<double>(out.numel()); };
  loss_of(tanh(matmul(x, w) + b)).backward();
  Tensor w_grad = w.grad(), b_grad = b.grad();

  for (int round = 0; round < 5; ++round) {  // repeated: the engine's threads get exercised
    for (int n = 1; n <= 4; ++n) {
      INFO(n << " devices");
      w.set_grad(Tensor());
      b.set_grad(Tensor());
      std::vector<Tensor> chunks = parallel::scatter(x, cpus(n));
      auto replicas = parallel::broadcast({w, b}, cpus(static_cast<int>(chunks.size())));
      std::vector<Tensor> outs;
      for (size_t k = 0; k < chunks.size(); ++k) {
        outs.push_back(tanh(matmul(chunks[k], replicas[k][0]) + replicas[k][1]));
      }
      loss_of(parallel::gather(outs, cpu(0))).backward();
      CHECK(max_abs_diff(w.grad(), w_grad) < 1e-12);
      CHECK(max_abs_diff(b.grad(), b_grad) < 1e-12);
    }
  }
}
