// Module: registration, dotted names, train/eval, deep copies, devices and state dicts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "duet/duet.h"
#include "duet/nn/layers.h"
#include "duet/nn/models/models.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {
nn::Sequential small_net() {
  return nn::Sequential(nn::Linear(4, 3), nn::ReLU(), nn::Sequential(nn::Linear(3, 2, /*bias=*/false)));
}
}  // namespace

TEST_CASE("named_parameters uses dotted names in registration order", "[nn][module]") {
  nn::Sequential net = small_net();
  std::vector<std::string> names;
  for (const auto& [name, p] : net->named_parameters()) {
    names.push_back(name);
    CHECK(p.requires_grad());
  }
  CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "2.0.weight"});
  CHECK(net->num_parameters() == 4 * 3 + 3 + 3 * 2);
  CHECK_THAT(net->str(), Contains("(0): Linear(in_features=4, out_features=3, bias=True)") && Contains("(1): ReLU()"));
}

TEST_CASE("train() and eval() reach every child", "[nn][module]") {
  nn::Sequential net = small_net();
  net->eval();
  CHECK_FALSE(net->is_training());
  CHECK_FALSE((*net)[2].is_training());
  net->train();
  CHECK((*net)[2].is_training());
}

TEST_CASE("clone() is a deep copy that trains independently", "[nn][module]") {
  auto net = nn::models::lenet_relu();
  std::shared_ptr<nn::Module> copy = net->clone(cpu(1));
  auto original = net->named_parameters(), cloned = copy->named_parameters();
  REQUIRE(original.size() == cloned.size());
  for (size_t i = 0; i < original.size(); ++i) {
    CHECK(cloned[i].first == original[i].first);
    CHECK(cloned[i].second.device() == cpu(1));
    CHECK(cloned[i].second.storage() != original[i].second.storage());
    CHECK(cloned[i].second.to(cpu()).to_vector<float>() == original[i].second.to_vector<float>());
    CHECK(cloned[i].second.requires_grad());
  }
  {
    NoGradGuard no_grad;
    cloned[0].second.fill_(0.0);
  }
  CHECK(original[0].second.to_vector<float>() != cloned[0].second.to(cpu()).to_vector<float>());
  // The copy runs on its own device.
  Tensor out = copy->forward(rand({2, 1, 28, 28}, {.device = cpu(1)}));
  CHECK(out.device() == cpu(1));
  CHECK(out.sizes() == Shape{2, 10});
}

TEST_CASE("to() moves parameters and buffers", "[nn][module]") {
  nn::BatchNorm2d bn(3);
  bn->to(cpu(2));
  for (const auto& [name, t] : bn->state_dict()) {
    INFO(name);
    CHECK(t.device() == cpu(2));
  }
  CHECK(bn->parameters()[0].requires_grad());
  CHECK(bn->parameters()[0].is_leaf());
}

TEST_CASE("load_state_dict names the first mismatch and changes nothing on error", "[nn][module][errors]") {
  nn::Sequential a = small_net(), b = small_net();
  std::map<std::string, Tensor> state;
  for (auto& [name, t] : a->state_dict()) state[name] = t;
  b->load_state_dict(state);
  CHECK(b->parameters()[0].to_vector<float>() == a->parameters()[0].to_vector<float>());

  std::vector<float> before = b->parameters()[1].to_vector<float>();
  auto wrong_shape = state;
  wrong_shape["0.bias"] = zeros({3});  // fine
  wrong_shape["2.0.weight"] = zeros({2, 4});
  CHECK_THROWS_WITH(b->load_state_dict(wrong_shape),
                    Contains("'2.0.weight'") && Contains("[2, 4]") && Contains("[2, 3]"));
  CHECK(b->parameters()[1].to_vector<float>() == before);  // the good tensor was not written either

  auto missing = state;
  missing.erase("0.bias");
  CHECK_THROWS_WITH(b->load_state_dict(missing), Contains("'0.bias'") && Contains("lacks"));
  auto extra = state;
  extra["3.weight"] = zeros({1});
  CHECK_THROWS_WITH(b->load_state_dict(extra), Contains("unexpected tensor '3.weight'"));
}

TEST_CASE("BatchNorm2d keeps PyTorch's buffers and updates them only in training", "[nn][module]") {
  nn::BatchNorm2d bn(2);
  std::vector<std::string> names;
  for (const auto& [name, t] : bn->state_dict()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
  Tensor x = randn({4, 2, 3, 3}) + 5.0;
  bn->forward(x);
  CHECK(bn->running_mean().to_vector<float>()[0] == Approx(0.5).margin(0.2));  // 0.1 * ~5
  bn->eval();
  std::vector<float> mean = bn->running_mean().to_vector<float>();
  bn->forward(x);
  CHECK(bn->running_mean().to_vector<float>() == mean);
}

TEST_CASE("Conv2d takes PyTorch's options: per-axis sizes, dilation and groups", "[nn][module]") {
  nn::Conv2d depthwise(nn::Conv2dOptions(8, 16, {3, 1}).stride({2, 1}).padding({1, 0}).dilation(2).groups(8));
  CHECK(depthwise->weight().sizes() == Shape{16, 1, 3, 1});
  CHECK(depthwise->str() ==
        "Conv2d(8, 16, kernel_size=(3, 1), stride=(2, 1), padding=(1, 0), dilation=(2, 2), groups=8)");
  Tensor x = randn({2, 8, 9, 5});
  Tensor out = depthwise(x);
  CHECK(out.sizes() == Shape{2, 16, 4, 5});
  const Tensor want = nn::functional::conv2d(x, depthwise->weight(), depthwise->bias(),
                                             {.stride = {2, 1}, .padding = {1, 0}, .dilation = 2, .groups = 8});
  CHECK(out.to_vector<float>() == want.to_vector<float>());
  // The bound of PyTorch's default init comes from the channels one output reads, 1 here.
  CHECK(max(abs(depthwise->weight())).item<float>() <= 1 / std::sqrt(3.0f));
  // Today's spelling is unchanged.
  CHECK(nn::Conv2d(nn::Conv2dOptions(1, 6, 5).padding(2))->str() ==
        "Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))");
  REQUIRE_THROWS_WITH(nn::Conv2d(nn::Conv2dOptions(6, 8, 3).groups(4)),
                      Contains("Conv2d: in_channels 6 is not divisible by groups 4"));
  REQUIRE_THROWS_WITH(nn::Conv2d(nn::Conv2dOptions(8, 6, 3).groups(4)),
                      Contains("Conv2d: out_channels 6 is not divisible by groups 4"));
  REQUIRE_THROWS_WITH(nn::Conv2d(nn::Conv2dOptions(8, 8, 3).dilation(0)),
                      Contains("Conv2d: kernel size 3, stride 1 and dilation 0 must be positive and padding 0 >= 0"));
}

TEST_CASE("pooling layers take PyTorch's options", "[nn][module]") {
  Tensor x = randn({1, 2, 8, 7});
  nn::MaxPool2d ceil_max(nn::MaxPool2dOptions(3).stride(2).ceil_mode(true));
  CHECK(ceil_max->str() == "MaxPool2d(kernel_size=3, stride=2, padding=0, dilation=1, ceil_mode=True)");
  CHECK(ceil_max(x).sizes() == Shape{1, 2, 4, 3});
  nn::AvgPool2d avg(nn::AvgPool2dOptions({3, 2}).stride({2, 1}).padding({1, 0}).count_include_pad(false));
  CHECK(avg->str() == "AvgPool2d(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0))");  // as PyTorch prints it
  CHECK(
      avg(x).to_vector<float>() ==
      nn::functional::avg_pool2d(x, {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}, .count_include_pad = false})
          .to_vector<float>());
  nn::MaxPool2d dilated(nn::MaxPool2dOptions(3).stride(1).padding(1).dilation({2, 1}));
  CHECK(dilated->str() == "MaxPool2d(kernel_size=3, stride=1, padding=1, dilation=(2, 1), ceil_mode=False)");
  CHECK(dilated(x).to_vector<float>() ==
        nn::functional::max_pool2d(x, {.kernel = 3, .stride = 1, .padding = 1, .dilation = {2, 1}}).to_vector<float>());
  nn::AvgPool2d divided(nn::AvgPool2dOptions(2).divisor_override(3));
  CHECK(divided->str() == "AvgPool2d(kernel_size=2, stride=2, padding=0)");
  CHECK(divided(x).to_vector<float>() ==
        nn::functional::avg_pool2d(x, {.kernel = 2, .divisor_override = 3}).to_vector<float>());
  // Today's spellings: kernel, stride (0: the kernel's), padding.
  CHECK(nn::MaxPool2d(2)->str() == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  CHECK(nn::AvgPool2d(3, 2, 1)(x).sizes() == Shape{1, 2, 4, 4});
  nn::AdaptiveMaxPool2d adaptive_max(PerAxis{2, 3});
  CHECK(adaptive_max->str() == "AdaptiveMaxPool2d(output_size=(2, 3))");
  CHECK(adaptive_max(x).to_vector<float>() == nn::functional::adaptive_max_pool2d(x, {2, 3}).to_vector<float>());
  CHECK(nn::AdaptiveAvgPool2d(1)->str() == "AdaptiveAvgPool2d(output_size=1)");
  CHECK(nn::AdaptiveAvgPool2d(PerAxis{3, 1})(x).sizes() == Shape{1, 2, 3, 1});
}

namespace {

// The largest elementwise |a - b|.
double largest_gap(const Tensor& a, const Tensor& b) {
  const std::vector<double> u = a.to_vector<double>(), v = b.to_vector<double>();
  double gap = 0;
  for (size_t i = 0; i < u.size(); ++i) gap = std::max(gap, std::fabs(u[i] - v[i]));
  return gap;
}

// y = net(x) and its parameters' gradients of sum(y^2) are those of net's modules called one by one.
void check_as_one_by_one(nn::FusedSequential& net, const Tensor& x, const Tensor& y) {
  sum(y * y).backward();
  std::vector<Tensor> grads;
  for (const Tensor& p : net->parameters()) grads.push_back(p.grad().clone());
  net->zero_grad();
  Tensor z = x;
  for (size_t i = 0; i < net->size(); ++i) z = (*net)[i].forward(z);
  sum(z * z).backward();
  CHECK(largest_gap(z, y) < 1e-6);
  const std::vector<Tensor> params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i) CHECK(largest_gap(params[i].grad(), grads[i]) < 1e-5);
}

}  // namespace

TEST_CASE("Sequential runs its modules one by one, and fuses nothing", "[nn][module]") {
  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(1, 4, 3)), nn::ReLU(), nn::AvgPool2d(2));
  CHECK(net(randn({2, 1, 10, 10})).grad_fn()->name() == "AvgPool2dBackward");
}

TEST_CASE("FusedSequential fuses an activation and the AvgPool2d after it, with the modules' results", "[nn][module]") {
  nn::FusedSequential net(nn::Sequential(nn::Conv2d(nn::Conv2dOptions(2, 3, 3)), nn::ReLU(), nn::AvgPool2d(2),
                                         nn::Sigmoid(), nn::MaxPool2d(2), nn::Tanh(),
                                         nn::AvgPool2d(nn::AvgPool2dOptions(2).stride(1).padding(1))));
  Tensor x = randn({2, 2, 10, 10});
  Tensor y = net(x);
  // Both pairs ending in AvgPool2d ran fused; Sigmoid before MaxPool2d ran alone.
  CHECK(y.grad_fn()->name() == "TanhAvgPool2dBackward");
  CHECK((*net)[1].forward((*net)[0].forward(x)).grad_fn()->name() == "ReluBackward");
  check_as_one_by_one(net, x, y);
}

TEST_CASE("FusedSequential runs a cheap Conv2d, its activation and AvgPool2d as one op, with the modules' results",
          "[nn][module]") {
  // 1 channel x 3x3 = 9 multiply-adds per output: fused; 4 x 3x3 = 36: not (only its pooling is).
  nn::FusedSequential net(nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 4, 3)), nn::ReLU(), nn::AvgPool2d(2),
                                         nn::Conv2d(nn::Conv2dOptions(4, 5, 3).padding(1)), nn::Sigmoid(),
                                         nn::AvgPool2d(2)));
  Tensor x = randn({2, 1, 14, 12});
  nn::FusedSequential first(nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 4, 3)), nn::ReLU(), nn::AvgPool2d(2)));
  CHECK(first(x).grad_fn()->name() == "Conv2dReluAvgPool2dBackward");
  Tensor y = net(x);
  CHECK(y.grad_fn()->name() == "SigmoidAvgPool2dBackward");
  check_as_one_by_one(net, x, y);
}

TEST_CASE("FusedSequential keeps the Sequential's modules and parameter names", "[nn][module]") {
  nn::Sequential plain(nn::Conv2d(nn::Conv2dOptions(1, 4, 3)), nn::ReLU(), nn::AvgPool2d(2), nn::Flatten(),
                       nn::Linear(36, 2));
  nn::FusedSequential fused(plain);
  CHECK(fused->name() == "FusedSequential");
  REQUIRE(fused->size() == plain->size());
  for (size_t i = 0; i < plain->size(); ++i) CHECK(&(*fused)[i] == &(*plain)[i]);
  std::vector<std::string> plain_names, fused_names;
  for (const auto& [name, p] : plain->named_parameters()) plain_names.push_back(name);
  for (const auto& [name, p] : fused->named_parameters()) fused_names.push_back(name);
  CHECK(fused_names == std::vector<std::string>{"0.weight", "0.bias", "4.weight", "4.bias"});
  CHECK(fused_names == plain_names);
  // A clone fuses too, on modules of its own.
  auto copy = std::dynamic_pointer_cast<nn::FusedSequentialImpl>(fused->clone(cpu()));
  REQUIRE(copy);
  CHECK(&(*copy)[0] != &(*fused)[0]);
  Tensor x = randn({1, 1, 8, 8});
  CHECK(copy->forward(x).to_vector<float>() == fused->forward(x).to_vector<float>());
  nn::Sequential head(copy->named_children()[0].second, copy->named_children()[1].second,
                      copy->named_children()[2].second);
  CHECK(nn::FusedSequential(head)(x).grad_fn()->name() == "Conv2dReluAvgPool2dBackward");
}

TEST_CASE("the bundled models produce 10 logits for a Fashion-MNIST batch", "[nn][models]") {
  for (const std::string& name : nn::models::names()) {
    INFO(name);
    auto model = nn::models::make(name);
    Tensor out = model->forward(rand({2, 1, 28, 28}));
    CHECK(out.sizes() == Shape{2, 10});
  }
  CHECK(nn::models::make("lenet")->num_parameters() == 61706);
  CHECK_THROWS_WITH(nn::models::make("vgg"), Contains("unknown model 'vgg'"));
}
