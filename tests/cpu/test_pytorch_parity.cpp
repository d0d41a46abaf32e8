// Behaviours where duet once differed from PyTorch 1.13 and now follows it (docs/pytorch-parity.md).
// Unless a comment derives them by hand, the expected values were printed by Debian's
// python3-torch 1.13 running the same computation; each test names the torch call.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "duet/duet.h"
#include "duet/nn/functional.h"
#include "duet/nn/layers.h"
#include "duet/nn/safetensors.h"
#include "duet/optim/adam.h"
#include "duet/optim/checkpoint.h"
#include "duet/optim/schedule.h"
#include "duet/optim/sgd.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor leaf(const std::vector<double>& values) {
  Tensor t = from_vector<double>(values, {static_cast<int64_t>(values.size())});
  t.requires_grad_();
  return t;
}

// Equal element by element, NaN matching NaN and infinities matching exactly.
void check_same(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else {
      CHECK(got[i] == Approx(want[i]).epsilon(1e-12));
    }
  }
}

}  // namespace

TEST_CASE("maximum and minimum propagate NaN from either side, with torch's gradients", "[parity]") {
  // a = [nan, 1, 2, 1, nan], b = [1, nan, 2, 3, nan]; y = torch.maximum(a, b) (and minimum),
  // y.backward(torch.ones(5)): a NaN gives both sides the whole gradient, a tie half of it.
  struct Case {
    const char* name;
    Tensor (*op)(const Tensor&, const Tensor&);
    std::vector<double> y, grad_a, grad_b;
  };
  for (const Case& c : {Case{"maximum", maximum, {kNaN, kNaN, 2, 3, kNaN}, {1, 1, 0.5, 0, 1}, {1, 1, 0.5, 1, 1}},
                        Case{"minimum", minimum, {kNaN, kNaN, 2, 1, kNaN}, {1, 1, 0.5, 1, 1}, {1, 1, 0.5, 0, 1}}}) {
    INFO(c.name);
    Tensor a = leaf({kNaN, 1, 2, 1, kNaN}), b = leaf({1, kNaN, 2, 3, kNaN});
    Tensor y = c.op(a, b);
    check_same(y.to_vector<double>(), c.y);
    sum(y).backward();
    check_same(a.grad().to_vector<double>(), c.grad_a);
    check_same(b.grad().to_vector<double>(), c.grad_b);
  }

  // f32 runs the same functor; integers are untouched by the NaN test.
  Tensor f = maximum(from_vector<float>({std::nanf(""), 1}), from_vector<float>({1, std::nanf("")}));
  CHECK(std::isnan(f.to_vector<float>()[0]));
  CHECK(std::isnan(f.to_vector<float>()[1]));
  CHECK(minimum(from_vector<int64_t>({-3, 4}), from_vector<int64_t>({2, 2})).to_vector<int64_t>() ==
        std::vector<int64_t>{-3, 2});
}

TEST_CASE("relu keeps NaN and its gradient, and -0 as -0", "[parity]") {
  // torch.relu([nan, -1, 0, 2]) = [nan, 0, 0, 2], gradient of the sum [1, 0, 0, 1]; relu(-0.) = -0.
  Tensor x = leaf({kNaN, -1, 0, 2});
  Tensor y = relu(x);
  check_same(y.to_vector<double>(), {kNaN, 0, 0, 2});
  sum(y).backward();
  check_same(x.grad().to_vector<double>(), {1, 0, 0, 1});
  CHECK(std::signbit(relu(from_vector<double>({-0.0})).item<double>()));

  // f32, over enough elements that the CPU runs its vectorised loop: every NaN survives.
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = i % 7 == 0 ? std::nanf("") : float(i % 5) - 2.f;
  std::vector<float> out = relu(from_vector<float>(values)).to_vector<float>();
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("element " << i);
    if (i % 7 == 0) CHECK(std::isnan(out[i]));
    else CHECK(out[i] == std::max(values[i], 0.f));
  }
}

TEST_CASE("pow's gradient for the exponent at base 0 is 0 only where the exponent is >= 0", "[parity]") {
  // y = torch.pow(a, b) for a = [0, 0, 0, 0, 2, -2], b = [2, 0, -1, -0.5, 3, 2]; y.sum().backward().
  // d/db a^b = a^b log a: at a = 0 torch takes 0 for b >= 0, and keeps inf * log 0 = -inf for b < 0.
  Tensor a = leaf({0, 0, 0, 0, 2, -2}), b = leaf({2, 0, -1, -0.5, 3, 2});
  Tensor y = pow(a, b);
  check_same(y.to_vector<double>(), {0, 1, kInf, kInf, 8, 4});
  sum(y).backward();
  check_same(b.grad().to_vector<double>(), {0, 0, -kInf, -kInf, 5.545177444479562, kNaN});
  check_same(a.grad().to_vector<double>(), {0, 0, -kInf, -kInf, 12, -4});
}

TEST_CASE("sum of integers is i64 and mean of integers is refused", "[parity]") {
  // torch.ones(300, dtype=torch.uint8).sum() = tensor(300) of dtype int64 (duet once gave u8 44).
  Tensor ones_u8 = ones({300}, {.dtype = DType::u8});
  Tensor total = sum(ones_u8);
  CHECK(total.dtype() == DType::i64);
  CHECK(total.item<int64_t>() == 300);
  Tensor rows = sum(ones_u8.view({3, 100}), {1});
  CHECK(rows.dtype() == DType::i64);
  CHECK(rows.to_vector<int64_t>() == std::vector<int64_t>{100, 100, 100});
  Tensor big = full({3}, 4e18, {.dtype = DType::i64});
  CHECK(sum(big.narrow(0, 0, 2)).item<int64_t>() == 8000000000000000000);  // i64 throughout
  CHECK(sum(from_vector<float>({1.5f, 2})).dtype() == DType::f32);

  // torch.mean(torch.ones(3, dtype=d)) raises "mean(): could not infer output dtype..." for
  // every integer d; duet names the tensor and the fix.
  for (DType dtype : {DType::u8, DType::i64}) {
    INFO(dtype_name(dtype));
    CHECK_THROWS_WITH(mean(ones({3}, {.dtype = dtype})), Contains("mean: could not infer output dtype") &&
                                                             Contains(dtype_name(dtype)) && Contains("to(DType::f32)"));
  }
}

TEST_CASE("div is true division, floor_divide rounds toward -inf", "[parity]") {
  // torch.div([-7, 7, -7, 7], [2, 2, -2, -2]) = [-3.5, 3.5, 3.5, -3.5], float32;
  // torch.floor_divide (and div with rounding_mode='floor') = [-4, 3, 3, -4], int64.
  Tensor a = from_vector<int64_t>({-7, 7, -7, 7}), b = from_vector<int64_t>({2, 2, -2, -2});
  Tensor q = div(a, b);
  CHECK(q.dtype() == DType::f32);
  CHECK(q.to_vector<float>() == std::vector<float>{-3.5f, 3.5f, 3.5f, -3.5f});
  CHECK((a / b).dtype() == DType::f32);
  CHECK((a / 2.5).to_vector<float>() == std::vector<float>{-2.8f, 2.8f, -2.8f, 2.8f});
  CHECK((7.0 / from_vector<int64_t>({2})).item<float>() == 3.5f);
  Tensor f = floor_divide(a, b);
  CHECK(f.dtype() == DType::i64);
  CHECK(f.to_vector<int64_t>() == std::vector<int64_t>{-4, 3, 3, -4});
  CHECK(floor_divide(from_vector<int64_t>({6, -6, 0}), from_vector<int64_t>({-3, 3, -5})).to_vector<int64_t>() ==
        std::vector<int64_t>{-2, -2, 0});
  // u8 / u8 is f32 too; floor_divide keeps u8.
  Tensor u = from_vector<uint8_t>({1, 200}), two = from_vector<uint8_t>({2, 3});
  CHECK(div(u, two).to_vector<float>() == std::vector<float>{0.5f, 200.f / 3.f});
  CHECK(floor_divide(u, two).to_vector<uint8_t>() == std::vector<uint8_t>{0, 66});

  // An integer divisor of 0: torch.div gives inf (it divides as floats), torch.floor_divide
  // raises ZeroDivisionError, which duet makes an error naming the op.
  CHECK(div(from_vector<int64_t>({-7, 0}), from_vector<int64_t>({0, 0})).to_vector<float>()[0] == -INFINITY);
  CHECK(std::isnan(div(from_vector<int64_t>({0}), from_vector<int64_t>({0})).item<float>()));
  CHECK_THROWS_WITH(floor_divide(a, from_vector<int64_t>({1, 0, 1, 1})),
                    Contains("floor_divide") && Contains("division by zero"));
  CHECK_THROWS_WITH(floor_divide(a, from_vector<float>({1, 1, 1, 1})), Contains("floor_divide") && Contains("dtypes"));
}

TEST_CASE("floor_divide on floats matches torch.floor_divide, zero divisors and signed zeros included", "[parity]") {
  // torch.floor_divide(a, b) for these float64 pairs, printed with repr():
  const std::vector<double> a = {-7, 7, -7, 7, 1, -1, 0, 5.5, -5.5, 0.3, -0.0, 0, 1, 1e300, -1e-300};
  const std::vector<double> b = {2, 2, -2, -2, 0, 0, 0, 2, 2, 0.1, 5, -5, -5, 1e-300, 1};
  const std::vector<double> want = {-4, 3, 3, -4, kInf, -kInf, kNaN, 2, -3, 2, -0.0, -0.0, -1, kInf, -1};
  Tensor got = floor_divide(from_vector<double>(a), from_vector<double>(b));
  std::vector<double> values = got.to_vector<double>();
  check_same(values, want);
  CHECK(std::signbit(values[10]));
  CHECK(std::signbit(values[11]));
}

TEST_CASE("floor_divide's gradient is zero, as torch.div(rounding_mode='floor')", "[parity][gradcheck]") {
  // torch.div(x, [2, 2], rounding_mode='floor').sum().backward() leaves x.grad = [0, 0].
  Tensor x = leaf({3, -3}), y = leaf({2, 2});
  sum(floor_divide(x, y)).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0});
  CHECK(y.grad().to_vector<double>() == std::vector<double>{0, 0});
  // Away from the jumps central differences agree (quotients 1.8, -1.8 and -1.3).
  GradcheckResult result = gradcheck([](const std::vector<Tensor>& in) { return floor_divide(in[0], in[1]); },
                                     {leaf({3.6, -3.6, 0.5}), leaf({2, 2, -0.5 / 1.3})});
  INFO(result.message);
  CHECK(result.ok);
}

namespace {

// Six steps on loss = sum(c * p^2) + [steps 3, 5, 6 only] sum(d * q^2), from p = [1, -2, 3]
// and q = [0.5, -1.5]: q has no gradient at steps 1, 2 and 4.
struct SkippedGradients {
  using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

  explicit SkippedGradients(const MakeOptimizer& make) : optimizer(make({p, q})) {}

  static Tensor leaf_f32(const std::vector<float>& values) {
    Tensor t = from_vector<float>(values, {static_cast<int64_t>(values.size())});
    t.requires_grad_();
    return t;
  }
  void run_steps(int first, int last) {
    const Tensor c = from_vector<float>({1, 2, 0.5f}), d = from_vector<float>({3, 1});
    for (int step = first; step <= last; ++step) {
      optimizer->zero_grad();
      Tensor loss = sum(p * p * c);
      if (step == 3 || step >= 5) loss = loss + sum(q * q * d);
      loss.backward();
      optimizer->step();
    }
  }

  Tensor p = leaf_f32({1, -2, 3}), q = leaf_f32({0.5f, -1.5f});
  std::unique_ptr<optim::Optimizer> optimizer;
};

std::unique_ptr<optim::Optimizer> plain_adam(std::vector<Tensor> params) {
  return std::make_unique<optim::Adam>(std::move(params), optim::AdamOptions{.lr = 0.1});
}

void check_close_f32(const Tensor& got, const std::vector<float>& want) {
  std::vector<float> values = got.to_vector<float>();
  REQUIRE(values.size() == want.size());
  for (size_t i = 0; i < values.size(); ++i) CHECK(values[i] == Approx(want[i]).epsilon(1e-5).margin(1e-6));
}

}  // namespace

TEST_CASE("Adam and AdamW count steps per parameter, as torch.optim's state['step']", "[parity][optim]") {
  // torch.optim.Adam([p, q], lr=0.1, weight_decay=0.01) (and AdamW) over the same six steps,
  // with opt.zero_grad(set_to_none=True): q's state['step'] ends at 3, p's at 6.
  struct Case {
    bool decoupled;
    std::vector<float> p, q;
  };
  for (const Case& c : {Case{false, {0.4142364562f, -1.4051316977f, 2.4030637741f}, {0.2048712373f, -1.2009029388f}},
                        Case{true, {0.4099385142f, -1.3947819471f, 2.3867106438f}, {0.2037124038f, -1.1967245340f}}}) {
    INFO((c.decoupled ? "AdamW" : "Adam"));
    SkippedGradients run([&](std::vector<Tensor> params) -> std::unique_ptr<optim::Optimizer> {
      const optim::AdamOptions options{.lr = 0.1, .weight_decay = 0.01};
      if (c.decoupled) return std::make_unique<optim::AdamW>(std::move(params), options);
      return std::make_unique<optim::Adam>(std::move(params), options);
    });
    run.run_steps(1, 6);
    check_close_f32(run.p, c.p);
    check_close_f32(run.q, c.q);
    CHECK(run.optimizer->steps() == 6);
    CHECK(run.optimizer->updates(0) == 6);
    CHECK(run.optimizer->updates(1) == 3);
  }
}

TEST_CASE("per-parameter step counts survive state() and load_state()", "[parity][optim]") {
  SkippedGradients straight(plain_adam);
  straight.run_steps(1, 6);

  SkippedGradients first(plain_adam), resumed(plain_adam);
  first.run_steps(1, 4);  // q updated once, at step 3
  nn::NamedTensors state = first.optimizer->state();
  std::map<std::string, Tensor> saved(state.begin(), state.end());
  CHECK(saved.at("step").item<int64_t>() == 4);
  CHECK(saved.at("0.step").item<int64_t>() == 4);
  CHECK(saved.at("1.step").item<int64_t>() == 1);
  {
    NoGradGuard no_grad;
    resumed.p.copy_(first.p);
    resumed.q.copy_(first.q);
  }
  resumed.optimizer->load_state(saved);
  resumed.run_steps(5, 6);
  CHECK(resumed.p.to_vector<float>() == straight.p.to_vector<float>());
  CHECK(resumed.q.to_vector<float>() == straight.q.to_vector<float>());

  saved["1.step"] = from_vector<float>({1.5f});
  CHECK_THROWS_WITH(resumed.optimizer->load_state(saved), Contains("'1.step'") && Contains("one integer"));
  saved["1.step"] = from_vector<int64_t>({-1});
  CHECK_THROWS_WITH(resumed.optimizer->load_state(saved), Contains("'1.step'") && Contains(">= 0"));
}

TEST_CASE("a state without per-parameter counts gives parameters with buffers the global step", "[parity][optim]") {
  // What checkpoints of version 1 hold: "step" and the buffers. q has none (never updated).
  SkippedGradients run(plain_adam);
  run.run_steps(1, 2);
  std::map<std::string, Tensor> old_format;
  for (auto& [name, t] : run.optimizer->state()) {
    if (name != "0.step" && name != "1.step") old_format[name] = t;
  }
  REQUIRE(old_format.count("0.exp_avg"));
  REQUIRE_FALSE(old_format.count("1.exp_avg"));
  optim::Adam restored({run.p, run.q}, {.lr = 0.1});
  restored.load_state(old_format);
  CHECK(restored.steps() == 2);
  CHECK(restored.updates(0) == 2);
  CHECK(restored.updates(1) == 0);
}

TEST_CASE("checkpoints carry the per-parameter counts, and version 1 files still load", "[parity][optim][checkpoint]") {
  const std::string path = (std::filesystem::temp_directory_path() / "duet-test-parity-ckpt.safetensors").string();
  nn::Linear model(3, 2);
  optim::Adam adam(model->parameters(), {.lr = 0.1});
  Tensor x = rand({4, 3});
  for (int step = 0; step < 3; ++step) {
    adam.zero_grad();
    Tensor loss = sum(model->forward(x));
    loss.backward();
    if (step == 0) model->parameters()[1].set_grad(Tensor());  // the bias misses the first step
    adam.step();
  }
  REQUIRE(adam.updates(0) == 3);
  REQUIRE(adam.updates(1) == 2);
  Generator generator(1);
  optim::save_checkpoint(path, *model, adam, generator, {.epochs_done = 1});
  nn::SafeTensors file = nn::load_safetensors(path);
  CHECK(file.metadata.at("version") == "2");
  CHECK(file.tensors.at("optim.1.step").item<int64_t>() == 2);

  nn::Linear fresh(3, 2);
  optim::Adam loaded(fresh->parameters(), {.lr = 0.1});
  optim::load_checkpoint(path, *fresh, loaded, generator);
  CHECK(loaded.updates(0) == 3);
  CHECK(loaded.updates(1) == 2);

  // The same file as duet wrote it before the counts: version 1, no "optim.<index>.step".
  nn::NamedTensors v1_tensors;
  for (auto& [name, t] : file.tensors) {
    if (name != "optim.0.step" && name != "optim.1.step") v1_tensors.emplace_back(name, t);
  }
  std::map<std::string, std::string> v1_meta = file.metadata;
  v1_meta["version"] = "1";
  v1_meta.erase("tensor_checksum");  // recorded since a later version, and over the tensors above
  nn::save_safetensors(path, v1_tensors, v1_meta);
  optim::load_checkpoint(path, *fresh, loaded, generator);
  CHECK(loaded.updates(0) == 3);
  CHECK(loaded.updates(1) == 3);  // the documented rule: the global step

  v1_meta["version"] = "3";
  nn::save_safetensors(path, v1_tensors, v1_meta);
  CHECK_THROWS_WITH(optim::load_checkpoint(path, *fresh, loaded, generator),
                    Contains("checkpoint version '3'") && Contains("versions 1 and 2"));
  std::remove(path.c_str());
}

TEST_CASE("CosineLR keeps following the cosine past its period, as CosineAnnealingLR", "[parity][optim]") {
  // CosineAnnealingLR(SGD(lr=1.0), T_max=10, eta_min=0.1), the lr at each epoch as scheduler.step()
  // leaves it (PyTorch's recursive form; its closed form agrees within 5e-15): past T_max it rises
  // again, back to the base lr at 2 * T_max.
  optim::CosineLR cosine(10, 0.1);
  const std::vector<std::pair<int64_t, double>> torch_lrs = {{0, 1.0},
                                                             {5, 0.55},
                                                             {10, 0.1},
                                                             {11, 0.12202456766718092},
                                                             {12, 0.185942352531274},
                                                             {15, 0.550000000000002},
                                                             {20, 1.0000000000000042},
                                                             {25, 0.5500000000000022},
                                                             {30, 0.1}};
  for (const auto& [epoch, lr] : torch_lrs) {
    INFO("epoch " << epoch);
    CHECK(cosine.lr_at(1.0, epoch) == Approx(lr).epsilon(1e-12));
  }
}

namespace {

// A conv, a batch norm (buffers) and a linear layer, from `seed`.
nn::Sequential small_model(uint64_t seed) {
  manual_seed(seed);
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 2, 3)), nn::BatchNorm2d(2), nn::ReLU(), nn::Flatten(),
                        nn::Linear(2 * 2 * 2, 3));
}

// Three SGD steps on `model` from `optimizer`, over one fixed batch placed on `device`.
void train_three_steps(nn::Module& model, optim::Optimizer& optimizer, Device device) {
  manual_seed(5);
  const Tensor x = randn({6, 1, 4, 4}).to(device);
  const Tensor y = from_vector<int64_t>({0, 1, 2, 0, 1, 2}, {6}).to(device);
  for (int step = 0; step < 3; ++step) {
    optimizer.zero_grad();
    nn::functional::cross_entropy(model.forward(x), y).backward();
    optimizer.step();
  }
}

}  // namespace

TEST_CASE("Module::to moves parameters in place: an optimizer built before it trains the moved model",
          "[parity][nn][module]") {
  // libtorch's module->to() moves each parameter's data inside the same tensor; duet once put
  // new tensors in the module, and an optimizer built before to() then updated the old ones.
  nn::Sequential reference = small_model(3);
  optim::SGD reference_sgd(reference->parameters(), {.lr = 0.1, .momentum = 0.9});
  train_three_steps(*reference, reference_sgd, cpu(0));

  nn::Sequential model = small_model(3);
  const nn::NamedTensors params_before = model->named_parameters(), buffers_before = model->named_buffers();
  optim::SGD sgd(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  int hook_calls = 0;
  params_before[0].second.register_hook([&](const Tensor&) {
    ++hook_calls;
    return Tensor();
  });
  model->to(cpu(1));

  const nn::NamedTensors params_after = model->named_parameters(), buffers_after = model->named_buffers();
  for (size_t i = 0; i < params_before.size(); ++i) {
    INFO(params_before[i].first);
    CHECK(params_after[i].second.is_same(params_before[i].second));  // the same tensor, moved
    CHECK(params_before[i].second.device() == cpu(1));
    CHECK(params_before[i].second.requires_grad());
    CHECK(params_before[i].second.is_leaf());
  }
  for (size_t i = 0; i < buffers_before.size(); ++i) {
    INFO(buffers_before[i].first);
    CHECK(buffers_after[i].second.is_same(buffers_before[i].second));
    CHECK(buffers_before[i].second.device() == cpu(1));
  }

  train_three_steps(*model, sgd, cpu(1));
  CHECK(hook_calls == 3);
  const nn::NamedTensors want = reference->state_dict(), got = model->state_dict();
  REQUIRE(want.size() == got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO(want[i].first);
    CHECK(got[i].second.device() == cpu(1));
    CHECK(got[i].second.to(cpu(0)).to_vector<float>() == want[i].second.to_vector<float>());
  }
}

// A parameter and a buffer that are two views of one storage.
class TwoViews final : public nn::Cloneable<TwoViews> {
 public:
  TwoViews() {
    Tensor flat = arange(0, 6, 1, {.dtype = DType::f32});
    register_parameter("first", flat.narrow(0, 0, 3));
    register_buffer("second", flat.narrow(0, 3, 3));
  }
  Tensor forward(const Tensor& x) override { return x; }
  std::string name() const override { return "TwoViews"; }
};

TEST_CASE("Module::to moves gradients too, keeps shared storage shared, and clone() still copies",
          "[parity][nn][module]") {
  nn::Linear shared(3, 3);
  nn::Sequential model(shared, nn::ReLU(), shared);  // tied: one layer used twice
  sum(model->forward(ones({1, 3}))).backward();
  const Tensor weight = shared->parameters()[0];
  const std::vector<float> grad_values = weight.grad().to_vector<float>();
  const Tensor weight_alias = weight.detach();  // shares the storage, has an impl of its own
  model->to(cpu(2));
  CHECK(weight.device() == cpu(2));
  CHECK(weight.grad().device() == cpu(2));
  CHECK(weight.grad().to_vector<float>() == grad_values);
  CHECK(weight_alias.device() == cpu(0));  // not a module's tensor: stays, as in PyTorch

  TwoViews views;
  views.to(cpu(1));
  const Tensor first = views.parameters()[0], second = views.named_buffers()[0].second;
  CHECK(first.device() == cpu(1));
  CHECK(first.storage() == second.storage());  // still one storage, moved once
  CHECK(second.offset() == 3);
  CHECK(first.to_vector<float>() == std::vector<float>{0, 1, 2});
  CHECK(second.to_vector<float>() == std::vector<float>{3, 4, 5});

  std::shared_ptr<nn::Module> copy = model->clone(cpu(3));
  const Tensor copied = copy->parameters()[0];
  CHECK(copied.device() == cpu(3));
  CHECK(copied.storage() != weight.storage());
  {
    NoGradGuard no_grad;
    copied.fill_(0.0);
  }
  CHECK(weight.to_vector<float>() != copied.to_vector<float>());
}
