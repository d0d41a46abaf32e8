#include "options_golden.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "duet/duet.h"
#include "duet/nn/functional.h"
#include "duet/nn/layers.h"
#include "duet/nn/safetensors.h"
#include "duet/optim/adam.h"
#include "duet/optim/sgd.h"

namespace duet::test {
namespace {

namespace F = nn::functional;

const nn::SafeTensors& golden() {
  static const nn::SafeTensors file = [] {
    nn::SafeTensors f = nn::load_safetensors(DUET_SOURCE_DIR "/tests/golden/options.safetensors");
    REQUIRE(f.metadata.at("format") == "duet-golden");
    REQUIRE(f.metadata.at("version") == "1");
    return f;
  }();
  return file;
}

// The case prefixes ("ce.plain.") of every tensor named <kind>.<case>.<field>.
std::vector<std::string> cases(const std::string& kind, const std::string& field) {
  std::vector<std::string> out;
  for (const auto& [name, t] : golden().tensors) {
    const std::string suffix = "." + field;
    if (name.rfind(kind + ".", 0) == 0 && name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(name.substr(0, name.size() - field.size()));
    }
  }
  REQUIRE(!out.empty());
  return out;
}

const Tensor& get(const std::string& name) {
  auto it = golden().tensors.find(name);
  INFO("golden tensor " << name);
  REQUIRE(it != golden().tensors.end());
  return it->second;
}
bool has(const std::string& name) { return golden().tensors.count(name) > 0; }

// Within rtol of PyTorch's value (relative to max(1, |want|)), NaN exactly where PyTorch has NaN.
void check_close(const Tensor& got, const Tensor& want, double rtol, const std::string& what) {
  INFO(what << ": got " << got.describe() << ", want " << want.describe());
  REQUIRE(got.sizes() == want.sizes());
  const std::vector<double> a = got.to(cpu()).to(DType::f64).to_vector<double>();
  const std::vector<double> b = want.to(DType::f64).to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i << ": " << a[i] << " vs torch " << b[i]);
    if (std::isnan(b[i])) {
      CHECK(std::isnan(a[i]));
    } else {
      CHECK(std::abs(a[i] - b[i]) <= rtol * std::max(1.0, std::abs(b[i])));
    }
  }
}

// A leaf on `device` that requires grad.
Tensor leaf_on(const Tensor& t, Device device) {
  Tensor out = t.to(device).detach();
  out.requires_grad_();
  return out;
}

}  // namespace

void check_cross_entropy_golden(Device device) {
  for (const std::string& p : cases("ce", "x")) {
    F::CrossEntropyOptions options;
    if (has(p + "weight")) options.weight = get(p + "weight").to(device);
    options.ignore_index = get(p + "ignore_index").to_vector<int64_t>()[0];
    options.label_smoothing = get(p + "label_smoothing").to_vector<double>()[0];
    const Tensor target = get(p + "target").to(device);
    for (const auto& [name, reduction] : std::vector<std::pair<std::string, F::Reduction>>{
             {"none", F::Reduction::none}, {"sum", F::Reduction::sum}, {"mean", F::Reduction::mean}}) {
      const std::string what = p + name + " on " + device.str();
      options.reduction = reduction;
      Tensor x = leaf_on(get(p + "x"), device);
      Tensor loss = F::cross_entropy(x, target, options);
      check_close(loss, get(p + "loss_" + name), 1e-10, what + " loss");
      loss.backward(reduction == F::Reduction::none ? get(p + "upstream").to(device) : Tensor());
      check_close(x.grad(), get(p + "grad_" + name), 1e-10, what + " gradient");
    }
  }
}

void check_reductions_golden(Device device) {
  enum Op { amin_op, min_op, argmin_op, var_op, std_op };  // tools/make_options_golden.py's order
  for (const std::string& p : cases("reduce", "x")) {
    const std::string what = p + " on " + device.str();
    const auto op = static_cast<Op>(get(p + "op").to_vector<int64_t>()[0]);
    const std::vector<int64_t> dims = get(p + "dims").to_vector<int64_t>();
    const bool keepdim = get(p + "keepdim").to_vector<int64_t>()[0] != 0;
    Tensor x = leaf_on(get(p + "x"), device);
    if (op == argmin_op) {
      Tensor indices = argmin(x, dims.at(0), keepdim);
      CHECK(indices.to(cpu()).to_vector<int64_t>() == get(p + "out").to_vector<int64_t>());
      CHECK(indices.sizes() == get(p + "out").sizes());
      continue;
    }
    Tensor out;
    switch (op) {
      case amin_op:
        out = dims.empty() ? min(x) : amin(x, dims, keepdim);
        break;
      case min_op: {
        ValuesIndices m = min(x, dims.at(0), keepdim);
        INFO(what);
        CHECK(m.indices.to(cpu()).to_vector<int64_t>() == get(p + "indices").to_vector<int64_t>());
        CHECK(m.indices.sizes() == get(p + "indices").sizes());
        out = m.values;
        break;
      }
      default: {
        const bool unbiased = get(p + "unbiased").to_vector<int64_t>()[0] != 0;
        out = op == var_op ? var(x, dims, unbiased, keepdim) : ::duet::std(x, dims, unbiased, keepdim);
      }
    }
    check_close(out, get(p + "out"), 1e-10, what + " values");
    out.backward(get(p + "upstream").to(device));
    check_close(x.grad(), get(p + "grad"), 1e-10, what + " gradient");
  }
}

void check_amsgrad_golden(Device device) {
  for (const std::string& p : cases("adam", "p0")) {
    const std::vector<double> betas = get(p + "betas").to_vector<double>();
    const optim::AdamOptions options{.lr = get(p + "lr").to_vector<double>()[0],
                                     .beta1 = betas.at(0),
                                     .beta2 = betas.at(1),
                                     .eps = get(p + "eps").to_vector<double>()[0],
                                     .weight_decay = get(p + "weight_decay").to_vector<double>()[0],
                                     .decoupled_weight_decay = get(p + "decoupled").to_vector<int64_t>()[0] != 0,
                                     .amsgrad = true};
    const std::vector<Tensor> params = {leaf_on(get(p + "p0"), device), leaf_on(get(p + "p1"), device)};
    optim::Adam adam(params, options);
    const int64_t steps = get(p + "steps").to_vector<int64_t>()[0];
    for (int64_t k = 0; k < steps; ++k) {
      for (size_t i = 0; i < params.size(); ++i) {
        const std::string g = p + "g" + std::to_string(i) + "." + std::to_string(k);
        params[i].set_grad(has(g) ? get(g).to(device) : Tensor());
      }
      adam.step();
      std::map<std::string, Tensor> state;
      for (auto& [name, t] : adam.state()) state[name] = t;
      for (size_t i = 0; i < params.size(); ++i) {
        const std::string suffix = std::to_string(i) + "." + std::to_string(k);
        const std::string what =
            p + " on " + device.str() + ", parameter " + std::to_string(i) + ", step " + std::to_string(k);
        check_close(params[i], get(p + "after" + suffix), 1e-10, what);
        check_close(state.at(std::to_string(i) + ".max_exp_avg_sq"), get(p + "max_exp_avg_sq" + suffix), 1e-10,
                    what + " max_exp_avg_sq");
      }
    }
  }
}

namespace {

// The case's optimizer, maximize on, over `param`.
std::unique_ptr<optim::Optimizer> maximizing_optimizer(const std::string& p, const Tensor& param) {
  const std::vector<double> hyper = get(p + "hyper").to_vector<double>();    // lr, momentum, dampening, decay
  const std::vector<int64_t> flags = get(p + "flags").to_vector<int64_t>();  // nesterov, amsgrad
  const int64_t kind = get(p + "kind").to_vector<int64_t>()[0];              // 0 sgd, 1 adam, 2 adamw
  if (kind == 0) {
    return std::make_unique<optim::SGD>(std::vector<Tensor>{param}, optim::SGDOptions{.lr = hyper.at(0),
                                                                                      .momentum = hyper.at(1),
                                                                                      .dampening = hyper.at(2),
                                                                                      .weight_decay = hyper.at(3),
                                                                                      .nesterov = flags.at(0) != 0,
                                                                                      .maximize = true});
  }
  return std::make_unique<optim::Adam>(std::vector<Tensor>{param},
                                       optim::AdamOptions{.lr = hyper.at(0),
                                                          .beta1 = 0.8,
                                                          .beta2 = 0.9,
                                                          .eps = 1e-6,
                                                          .weight_decay = hyper.at(3),
                                                          .decoupled_weight_decay = kind == 2,
                                                          .amsgrad = flags.at(1) != 0,
                                                          .maximize = true});
}

}  // namespace

void check_maximize_golden(Device device) {
  for (const std::string& p : cases("max", "p0")) {
    const Tensor param = leaf_on(get(p + "p0"), device);
    const Tensor target = get(p + "target").to(device), curvature = get(p + "curvature").to(device);
    const std::unique_ptr<optim::Optimizer> optimizer = maximizing_optimizer(p, param);
    const int64_t steps = get(p + "steps").to_vector<int64_t>()[0];
    for (int64_t k = 0; k < steps; ++k) {
      optimizer->zero_grad();
      const Tensor gap = param - target;
      neg(sum(curvature * (gap * gap))).backward();
      optimizer->step();
      check_close(param, get(p + "after." + std::to_string(k)), 1e-10,
                  p + " on " + device.str() + ", step " + std::to_string(k));
    }
  }
}

void check_cumulative_batch_norm_golden(Device device) {
  nn::BatchNorm2d bn(3, nn::BatchNormOptions{.momentum = std::nullopt});
  CHECK(bn->str() == "BatchNorm2d(3, eps=1e-05, momentum=None, affine=True, track_running_stats=True)");
  {
    NoGradGuard no_grad;
    bn->parameters()[0].copy_(get("bn.weight"));
    bn->parameters()[1].copy_(get("bn.bias"));
  }
  bn->to(device);
  std::map<std::string, Tensor> buffers;
  for (auto& [name, t] : bn->named_buffers()) buffers[name] = t;
  const int64_t batches = get("bn.batches").to_vector<int64_t>()[0];
  for (int64_t k = 0; k < batches; ++k) {
    const std::string n = std::to_string(k), what = "batch " + n + " on " + device.str();
    check_close(bn->forward(get("bn.x." + n).to(device)), get("bn.y." + n), 1e-5, what + " output");
    check_close(buffers.at("running_mean"), get("bn.running_mean." + n), 1e-5, what + " running_mean");
    check_close(buffers.at("running_var"), get("bn.running_var." + n), 1e-5, what + " running_var");
    CHECK(buffers.at("num_batches_tracked").item<int64_t>() == get("bn.num_batches_tracked." + n).item<int64_t>());
  }
  bn->eval();
  check_close(bn->forward(get("bn.eval_x").to(device)), get("bn.eval_y"), 1e-5, "eval on " + device.str());
}

}  // namespace duet::test
