#include "options_golden.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "duet/duet.h"
#include "duet/nn/functional.h"
#include "duet/nn/safetensors.h"

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
    for (const auto& [name, reduction] :
         std::vector<std::pair<std::string, F::Reduction>>{{"none", F::Reduction::none}, {"sum", F::Reduction::sum},
                                                           {"mean", F::Reduction::mean}}) {
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
      case amin_op: out = dims.empty() ? min(x) : amin(x, dims, keepdim); break;
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

}  // namespace duet::test
