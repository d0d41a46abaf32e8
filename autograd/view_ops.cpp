// The Tensor view members. Each builds new sizes/strides/offset over the same storage
// (Tensor::as_strided) and, when the input requires grad, records a ViewBackward node whose
// backward maps the view's gradient back to the input's shape.
#include <algorithm>
#include <functional>
#include <optional>

#include "duet/autograd/checks.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/function.h"
#include "duet/autograd/op_helpers.h"
#include "duet/kernels/kernels.h"

namespace duet {
namespace {

using autograd::Node;
using autograd::TensorList;

using GradMap = std::function<Tensor(const Tensor& grad)>;

// Views need no saved tensors, only geometry, so one node type holds a small function from
// the view's gradient to the input's: reshape it back, invert a permutation, scatter it
// into zeros, or sum over expanded dims. Backward runs under NoGradGuard, so the views used
// inside these functions record nothing.
class ViewBackward final : public Node {
 public:
  ViewBackward(std::string name, GradMap map) : name_(std::move(name)), map_(std::move(map)) {}
  TensorList apply(TensorList&& grads) override {
    if (!grads.at(0).defined()) return {Tensor()};
    return {map_(grads[0])};
  }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  GradMap map_;
};

// Records `view` as a differentiable view of `input` (when input requires grad). `make_map`
// builds the backward function only when it is needed.
template <class MakeMap> Tensor finish_view(const Tensor& input, Tensor view, const char* name, MakeMap&& make_map) {
  if (autograd::needs_grad({input})) {
    autograd::record(std::make_shared<ViewBackward>(name, GradMap(make_map())), {input}, {view});
  }
  return view;
}

// The backward of every shape-only view (view, reshape, flatten, squeeze, unsqueeze).
GradMap reshape_back(Shape input_shape) {
  return [input_shape = std::move(input_shape)](const Tensor& g) { return g.reshape(input_shape); };
}

// The backward of slice and select: the gradient lands in the matching view of zeros.
GradMap scatter_into_zeros(Shape input_shape, std::function<Tensor(const Tensor&)> same_view) {
  return [input_shape = std::move(input_shape), same_view = std::move(same_view)](const Tensor& g) {
    Tensor full = zeros(input_shape, autograd::options_of(g));
    kernels::copy(g, same_view(full));
    return full;
  };
}

// Replaces one -1 by the size that keeps numel, and checks the total.
Shape infer_shape(const char* op, Shape sizes, const Tensor& t) {
  std::optional<size_t> free_dim;
  int64_t known = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == -1) {
      DUET_CHECK(!free_dim, op, ": only one dim can be -1, got ", shape_str(sizes));
      free_dim = d;
    } else {
      DUET_CHECK(sizes[d] >= 0, op, ": invalid size ", sizes[d], " in shape ", shape_str(sizes));
      known *= sizes[d];
    }
  }
  if (free_dim) {
    DUET_CHECK(known != 0 && t.numel() % known == 0, op, ": shape ", shape_str(sizes), " is invalid for a tensor of ",
               t.numel(), " elements (", t.describe(), ")");
    sizes[*free_dim] = t.numel() / known;
  }
  DUET_CHECK(numel(sizes) == t.numel(), op, ": shape ", shape_str(sizes), " is invalid for a tensor of ", t.numel(),
             " elements (", t.describe(), ")");
  return sizes;
}

// Strides that present `t`'s elements in row-major order under `sizes` without moving them,
// or nothing when its layout does not allow it (PyTorch's computeStride). Dims are taken in
// chunks that are contiguous among themselves; each new dim must fall inside one chunk.
std::optional<Shape> view_strides(const Tensor& t, const Shape& sizes) {
  const Shape& old_sizes = t.sizes();
  const Shape& old_strides = t.strides();
  Shape strides(sizes.size(), 1);
  if (old_sizes.empty()) return strides;  // a 0-d tensor: every new dim has size 1
  if (t.numel() == 0) return contiguous_strides(sizes);
  int64_t view_d = static_cast<int64_t>(sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_sizes.size()) - 1; d >= 0; --d) {
    const auto ud = static_cast<size_t>(d);
    tensor_numel *= old_sizes[ud];
    bool chunk_ends = d == 0 || (old_sizes[ud - 1] != 1 && old_strides[ud - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || sizes[static_cast<size_t>(view_d)] == 1)) {
      strides[static_cast<size_t>(view_d)] = view_numel * chunk_base_stride;
      view_numel *= sizes[static_cast<size_t>(view_d)];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_base_stride = old_strides[ud - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

}  // namespace

Tensor Tensor::view(Shape sizes) const {
  sizes = infer_shape("view", std::move(sizes), *this);
  std::optional<Shape> strides = view_strides(*this, sizes);
  DUET_CHECK(strides.has_value(), "view: shape ", shape_str(sizes), " is not compatible with the layout of ",
             describe(), " (strides ", shape_str(this->strides()),
             "): no strides present its elements in that shape without a copy; use reshape(), which copies "
             "when it must, or contiguous() first");
  Tensor out = as_strided(sizes, *strides, offset());
  return finish_view(*this, out, "ViewBackward", [&] { return reshape_back(this->sizes()); });
}

Tensor Tensor::reshape(Shape sizes) const {
  sizes = infer_shape("reshape", std::move(sizes), *this);
  if (view_strides(*this, sizes)) return view(std::move(sizes));
  return clone().view(std::move(sizes));  // clone() is contiguous and differentiable
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  start_dim = normalize_dim(start_dim, dim(), "flatten");
  end_dim = normalize_dim(end_dim, dim(), "flatten");
  DUET_CHECK(start_dim <= end_dim, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim, " for ",
             describe());
  Shape shape(sizes().begin(), sizes().begin() + start_dim);
  int64_t merged = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) merged *= size(d);
  shape.push_back(merged);
  shape.insert(shape.end(), sizes().begin() + end_dim + 1, sizes().end());
  return reshape(std::move(shape));
}

Tensor Tensor::permute(std::vector<int64_t> dims) const {
  DUET_CHECK(static_cast<int64_t>(dims.size()) == dim(), "permute: ", shape_str(dims), " names ", dims.size(),
             " dims, but ", describe(), " has ", dim());
  Shape new_sizes(dims.size()), new_strides(dims.size());
  std::vector<int64_t> inverse(dims.size(), -1);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = normalize_dim(dims[i], dim(), "permute");
    DUET_CHECK(inverse[static_cast<size_t>(d)] == -1, "permute: dim ", d, " appears twice in ", shape_str(dims));
    inverse[static_cast<size_t>(d)] = static_cast<int64_t>(i);
    new_sizes[i] = size(d);
    new_strides[i] = stride(d);
  }
  Tensor out = as_strided(std::move(new_sizes), std::move(new_strides), offset());
  return finish_view(*this, out, "PermuteBackward",
                     [&] { return [inverse](const Tensor& g) { return g.permute(inverse); }; });
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  Shape new_sizes = sizes(), new_strides = strides();
  if (dim() > 0) {
    auto d0 = static_cast<size_t>(normalize_dim(dim0, dim(), "transpose"));
    auto d1 = static_cast<size_t>(normalize_dim(dim1, dim(), "transpose"));
    std::swap(new_sizes[d0], new_sizes[d1]);
    std::swap(new_strides[d0], new_strides[d1]);
  } else {
    normalize_dim(dim0, 0, "transpose");
    normalize_dim(dim1, 0, "transpose");
  }
  Tensor out = as_strided(std::move(new_sizes), std::move(new_strides), offset());
  return finish_view(*this, out, "TransposeBackward",
                     [&] { return [dim0, dim1](const Tensor& g) { return g.transpose(dim0, dim1); }; });
}

Tensor Tensor::t() const {
  DUET_CHECK(dim() <= 2, "t: expected a tensor with at most 2 dims, got ", describe(), "; use transpose()");
  return dim() == 2 ? transpose(0, 1) : transpose(0, 0);
}

Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  DUET_CHECK(this->dim() > 0, "slice: cannot slice a 0-d tensor");
  DUET_CHECK(step >= 1, "slice: step must be at least 1, got ", step);
  dim = normalize_dim(dim, this->dim(), "slice");
  const int64_t length = size(dim);
  // Python's rules: negative indices count from the end, and out-of-range ones clamp.
  auto clamp_index = [length](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + length : i, 0, length); };
  start = clamp_index(start);
  end = std::max(clamp_index(end), start);
  Shape new_sizes = sizes(), new_strides = strides();
  const auto d = static_cast<size_t>(dim);
  new_sizes[d] = (end - start + step - 1) / step;
  new_strides[d] = strides()[d] * step;
  Tensor out = as_strided(std::move(new_sizes), std::move(new_strides), offset() + start * strides()[d]);
  return finish_view(*this, out, "SliceBackward", [&] {
    return scatter_into_zeros(sizes(), [=](const Tensor& t) { return t.slice(dim, start, end, step); });
  });
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  DUET_CHECK(this->dim() > 0, "narrow: cannot narrow a 0-d tensor");
  dim = normalize_dim(dim, this->dim(), "narrow");
  const int64_t size = this->size(dim);
  if (start < 0 && start >= -size) start += size;
  DUET_CHECK(start >= 0 && length >= 0 && start + length <= size, "narrow: start ", start, " and length ", length,
             " do not fit in dim ", dim, " (size ", size, ") of ", describe());
  return slice(dim, start, start + length);
}

Tensor Tensor::select(int64_t dim, int64_t index) const {
  DUET_CHECK(this->dim() > 0, "select: cannot select from a 0-d tensor");
  dim = normalize_dim(dim, this->dim(), "select");
  const int64_t size = this->size(dim);
  DUET_CHECK(index >= -size && index < size, "select: index ", index, " is out of range for dim ", dim, " (size ", size,
             ") of ", describe());
  if (index < 0) index += size;
  Shape new_sizes = sizes(), new_strides = strides();
  new_sizes.erase(new_sizes.begin() + dim);
  new_strides.erase(new_strides.begin() + dim);
  Tensor out = as_strided(std::move(new_sizes), std::move(new_strides), offset() + index * stride(dim));
  return finish_view(*this, out, "SelectBackward", [&] {
    return scatter_into_zeros(sizes(), [=](const Tensor& t) { return t.select(dim, index); });
  });
}

Tensor Tensor::squeeze() const {
  Shape new_sizes, new_strides;
  for (int64_t d = 0; d < dim(); ++d) {
    if (size(d) == 1) continue;
    new_sizes.push_back(size(d));
    new_strides.push_back(stride(d));
  }
  Tensor out = as_strided(std::move(new_sizes), std::move(new_strides), offset());
  return finish_view(*this, out, "SqueezeBackward", [&] { return reshape_back(sizes()); });
}

Tensor Tensor::squeeze(int64_t dim) const {
  Shape new_sizes = sizes(), new_strides = strides();
  if (this->dim() > 0) {
    dim = normalize_dim(dim, this->dim(), "squeeze");
    if (size(dim) == 1) {  // a dim of another size stays, as in PyTorch
      new_sizes.erase(new_sizes.begin() + dim);
      new_strides.erase(new_strides.begin() + dim);
    }
  } else {
    normalize_dim(dim, 0, "squeeze");
  }
  Tensor out = as_strided(std::move(new_sizes), std::move(new_strides), offset());
  return finish_view(*this, out, "SqueezeBackward", [&] { return reshape_back(sizes()); });
}

Tensor Tensor::unsqueeze(int64_t dim) const {
  dim = normalize_dim(dim, this->dim() + 1, "unsqueeze");
  Shape new_sizes = sizes(), new_strides = strides();
  const auto d = static_cast<size_t>(dim);
  // Any stride is valid for a size-1 dim; this one keeps a contiguous tensor contiguous.
  int64_t stride = d < sizes().size() ? sizes()[d] * strides()[d] : 1;
  new_sizes.insert(new_sizes.begin() + dim, 1);
  new_strides.insert(new_strides.begin() + dim, stride);
  Tensor out = as_strided(std::move(new_sizes), std::move(new_strides), offset());
  return finish_view(*this, out, "UnsqueezeBackward", [&] { return reshape_back(sizes()); });
}

Tensor Tensor::expand(Shape sizes) const {
  DUET_CHECK(static_cast<int64_t>(sizes.size()) >= dim(), "expand: cannot expand ", describe(), " to ",
             shape_str(sizes), ", which has fewer dims");
  const size_t lead = sizes.size() - static_cast<size_t>(dim());
  Shape new_strides(sizes.size(), 0);
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (d < lead) {  // a new leading dim: every index reads the same elements
      DUET_CHECK(sizes[d] >= 0, "expand: new leading dim ", d, " of ", shape_str(sizes), " must have a size ",
                 "(-1 keeps only existing dims), expanding ", describe());
      continue;
    }
    const int64_t old_size = this->sizes()[d - lead], old_stride = strides()[d - lead];
    if (sizes[d] == -1) sizes[d] = old_size;
    DUET_CHECK(sizes[d] == old_size || old_size == 1, "expand: cannot expand ", describe(), " to ", shape_str(sizes),
               ": dim ", d, " has size ", old_size, " (only size-1 dims can grow)");
    DUET_CHECK(sizes[d] >= 0, "expand: invalid size ", sizes[d], " in ", shape_str(sizes));
    new_strides[d] = sizes[d] == old_size ? old_stride : 0;
  }
  Tensor out = as_strided(sizes, std::move(new_strides), offset());
  return finish_view(*this, out, "ExpandBackward", [&] {
    return [input_shape = this->sizes()](const Tensor& g) { return autograd::sum_to_shape(g, input_shape); };
  });
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

}  // namespace duet
