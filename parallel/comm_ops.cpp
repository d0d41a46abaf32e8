// The ops compute with the counted, graph-free transfers of transfers.h, then record one node.
// Their backwards use the same transfers (duet has no double backward, so a backward's own
// data movement needs no graph).
#include "duet/parallel/comm_ops.h"

#include <algorithm>

#include "duet/autograd/checks.h"
#include "duet/autograd/function.h"
#include "duet/autograd/op_helpers.h"
#include "duet/parallel/transfers.h"

namespace duet::parallel {
namespace {

using autograd::input_needs_grad;
using autograd::Node;
using autograd::TensorList;
using transfers::moved;

std::vector<int64_t> row_counts(const std::vector<Tensor>& parts) {
  std::vector<int64_t> rows;
  for (const Tensor& part : parts) rows.push_back(part.size(0));
  return rows;
}

// Gathers the chunks' gradients back into one gradient of x, on x's device.
class ScatterBackward final : public Node {
 public:
  ScatterBackward(const Tensor& x, std::vector<int64_t> rows, LinkModel link)
      : shape_(x.sizes()), dtype_(x.dtype()), device_(x.device()), rows_(std::move(rows)), link_(std::move(link)) {}
  TensorList apply(TensorList&& grads) override {
    bool any = false;
    for (const Tensor& g : grads) any = any || g.defined();
    if (!any) return {Tensor()};
    return {transfers::concat_onto(grads, rows_, shape_, dtype_, device_, link_)};
  }
  std::string name() const override { return "ScatterBackward"; }

 private:
  Shape shape_;
  DType dtype_;
  Device device_;
  std::vector<int64_t> rows_;
  LinkModel link_;
};

// Sends each part its rows of the gradient, on the part's device.
class GatherBackward final : public Node {
 public:
  GatherBackward(const std::vector<Tensor>& parts, LinkModel link) : rows_(row_counts(parts)), link_(std::move(link)) {
    for (const Tensor& part : parts) devices_.push_back(part.device());
  }
  TensorList apply(TensorList&& grads) override {
    TensorList out(rows_.size());
    const Tensor& grad = grads.at(0);
    if (!grad.defined()) return out;
    int64_t start = 0;
    for (size_t k = 0; k < rows_.size(); ++k) {
      if (input_needs_grad(*this, k)) out[k] = moved(grad.narrow(0, start, rows_[k]), devices_[k], link_);
      start += rows_[k];
    }
    return out;
  }
  std::string name() const override { return "GatherBackward"; }

 private:
  std::vector<int64_t> rows_;
  std::vector<Device> devices_;
  LinkModel link_;
};

// Reduce-adds the gradients of all copies of each tensor onto the source: each device's
// gradients travel coalesced, then are summed there in device order. Output slot j of the node
// is a copy of input source_of_[j].
class BroadcastBackward final : public Node {
 public:
  BroadcastBackward(size_t inputs, std::vector<size_t> source_of, Device source, LinkModel link)
      : inputs_(inputs), source_of_(std::move(source_of)), source_(source), link_(std::move(link)) {}
  TensorList apply(TensorList&& grads) override {
    TensorList here = transfers::moved_coalesced(grads, source_, link_);
    std::vector<TensorList> per_input(inputs_);
    for (size_t j = 0; j < here.size(); ++j) per_input[source_of_[j]].push_back(std::move(here[j]));
    TensorList out(inputs_);
    for (size_t i = 0; i < inputs_; ++i) {
      if (input_needs_grad(*this, i)) out[i] = transfers::sum_onto(per_input[i], source_);
    }
    return out;
  }
  std::string name() const override { return "BroadcastBackward"; }

 private:
  size_t inputs_;
  std::vector<size_t> source_of_;
  Device source_;
  LinkModel link_;
};

// Sends result[i]'s gradient to every term of it, coalesced per device. Input d * count + i
// is per_device[d][i].
class ReduceAddBackward final : public Node {
 public:
  ReduceAddBackward(std::vector<Device> input_devices, LinkModel link)
      : input_devices_(std::move(input_devices)), link_(std::move(link)) {}
  TensorList apply(TensorList&& grads) override {
    TensorList out(input_devices_.size());
    std::vector<Device> done;
    for (Device device : input_devices_) {
      if (std::find(done.begin(), done.end(), device) != done.end()) continue;
      done.push_back(device);
      TensorList wanted(input_devices_.size());  // the gradients bound for `device`
      for (size_t j = 0; j < out.size(); ++j) {
        const Tensor& grad = grads.at(j % grads.size());
        if (input_devices_[j] == device && grad.defined() && input_needs_grad(*this, j)) wanted[j] = grad;
      }
      TensorList arrived = transfers::moved_coalesced(wanted, device, link_);
      for (size_t j = 0; j < out.size(); ++j) {
        if (arrived[j].defined()) out[j] = std::move(arrived[j]);
      }
    }
    return out;
  }
  std::string name() const override { return "ReduceAddBackward"; }

 private:
  std::vector<Device> input_devices_;
  LinkModel link_;
};

void check_devices(const char* op, const std::vector<Device>& devices) {
  DUET_CHECK(!devices.empty(), op, ": no devices given");
}

}  // namespace

std::vector<Tensor> scatter(const Tensor& x, const std::vector<Device>& devices, const LinkModel& link) {
  autograd::check_defined("scatter", x);
  check_devices("scatter", devices);
  DUET_CHECK(x.dim() > 0, "scatter: cannot split a 0-d tensor (", x.describe(), ") along dim 0");
  std::vector<int64_t> rows = chunk_sizes(x.size(0), static_cast<int64_t>(devices.size()));
  std::vector<Tensor> chunks;
  int64_t start = 0;
  for (size_t k = 0; k < rows.size(); ++k) {
    chunks.push_back(moved(x.detach().narrow(0, start, rows[k]), devices[k], link));
    start += rows[k];
  }
  if (autograd::needs_grad({x})) {
    auto node = std::make_shared<ScatterBackward>(x, std::move(rows), link);
    autograd::record(node, {x}, chunks);
    node->set_device(x.device());  // its backward collects onto x's device
  }
  return chunks;
}

Tensor gather(const std::vector<Tensor>& parts, Device target, const LinkModel& link) {
  DUET_CHECK(!parts.empty(), "gather: no tensors given");
  for (const Tensor& part : parts) autograd::check_defined("gather", part);
  DUET_CHECK(parts[0].dim() > 0, "gather: cannot join 0-d tensors (", parts[0].describe(), ") along dim 0");
  Shape shape = parts[0].sizes();
  for (size_t k = 0; k < parts.size(); ++k) {
    const Tensor& part = parts[k];
    DUET_CHECK(part.dim() == parts[0].dim() && part.dtype() == parts[0].dtype(), "gather: tensor ", k, " is ",
               part.describe(), " but tensor 0 is ", parts[0].describe());
    for (int64_t d = 1; d < part.dim(); ++d) {
      DUET_CHECK(part.size(d) == parts[0].size(d), "gather: tensor ", k, " is ", part.describe(), " but tensor 0 is ",
                 parts[0].describe(), "; all but dim 0 must match");
    }
    if (k > 0) shape[0] += part.size(0);
  }
  Tensor out = transfers::concat_onto(parts, row_counts(parts), shape, parts[0].dtype(), target, link);
  if (autograd::needs_grad(parts)) autograd::record(std::make_shared<GatherBackward>(parts, link), parts, {out});
  return out;
}

std::vector<std::vector<Tensor>> broadcast(const std::vector<Tensor>& tensors, const std::vector<Device>& devices,
                                           const LinkModel& link) {
  check_devices("broadcast", devices);
  for (size_t i = 0; i < tensors.size(); ++i) {
    autograd::check_defined("broadcast", tensors[i]);
    autograd::check_same_device("broadcast", tensors[0], tensors[i]);
  }
  std::vector<std::vector<Tensor>> result(devices.size());
  if (tensors.empty()) return result;
  const Device source = tensors[0].device();
  TensorList copies;              // the node's outputs: copies of tensors that require grad
  std::vector<size_t> source_of;  // which tensor each of them copies
  for (size_t d = 0; d < devices.size(); ++d) {
    if (devices[d] == source) {
      result[d] = tensors;
      continue;
    }
    result[d] = transfers::moved_coalesced(tensors, devices[d], link);
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].requires_grad()) {
        copies.push_back(result[d][i]);
        source_of.push_back(i);
      }
    }
  }
  if (autograd::needs_grad(tensors) && !copies.empty()) {
    auto node = std::make_shared<BroadcastBackward>(tensors.size(), std::move(source_of), source, link);
    autograd::record(node, tensors, copies);
    node->set_device(source);  // its backward reduces onto the source
  }
  return result;
}

std::vector<Tensor> reduce_add(const std::vector<std::vector<Tensor>>& per_device, Device target,
                               const LinkModel& link) {
  DUET_CHECK(!per_device.empty(), "reduce_add: no tensors given");
  const std::vector<Tensor>& first = per_device[0];
  TensorList inputs;  // d-major: per_device[d][i] is input d * count + i
  std::vector<Device> input_devices;
  for (size_t d = 0; d < per_device.size(); ++d) {
    DUET_CHECK(per_device[d].size() == first.size(), "reduce_add: list ", d, " holds ", per_device[d].size(),
               " tensors but list 0 holds ", first.size());
    for (size_t i = 0; i < first.size(); ++i) {
      const Tensor& t = per_device[d][i];
      autograd::check_defined("reduce_add", t);
      DUET_CHECK(t.sizes() == first[i].sizes() && t.dtype() == first[i].dtype(), "reduce_add: tensor ", i, " of list ",
                 d, " is ", t.describe(), " but of list 0 it is ", first[i].describe());
      inputs.push_back(t);
      input_devices.push_back(t.device());
    }
  }
  TensorList here = transfers::moved_coalesced(inputs, target, link);  // d-major, as inputs
  std::vector<Tensor> sums;
  for (size_t i = 0; i < first.size(); ++i) {
    TensorList terms;
    for (size_t d = 0; d < per_device.size(); ++d) terms.push_back(here[d * first.size() + i]);
    sums.push_back(transfers::sum_onto(terms, target));
  }
  if (!sums.empty() && autograd::needs_grad(inputs)) {
    autograd::record(std::make_shared<ReduceAddBackward>(std::move(input_devices), link), inputs, sums);
  }
  return sums;
}

}  // namespace duet::parallel
