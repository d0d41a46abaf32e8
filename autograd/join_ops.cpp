// Joining and splitting: cat, stack, split, chunk, and where.
//
// cat copies each input into a narrowed view of one output; split and chunk are plain views
// (their gradients flow through the views' own nodes).
#include "duet/autograd/checks.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/function.h"
#include "duet/autograd/op_helpers.h"
#include "duet/autograd/ops.h"
#include "duet/kernels/kernels.h"

namespace duet {
namespace {

using autograd::Node;
using autograd::SavedTensor;
using autograd::TensorList;

// Each input's gradient is the slice of the output gradient it was copied into.
class CatBackward final : public Node {
 public:
  CatBackward(int64_t dim, std::vector<int64_t> lengths) : dim_(dim), lengths_(std::move(lengths)) {}

  TensorList apply(TensorList&& grads) override {
    TensorList out(lengths_.size());
    if (!grads.at(0).defined()) return out;
    int64_t start = 0;
    for (size_t i = 0; i < lengths_.size(); ++i) {
      if (autograd::input_needs_grad(*this, i)) out[i] = grads[0].narrow(dim_, start, lengths_[i]);
      start += lengths_[i];
    }
    return out;
  }
  std::string name() const override { return "CatBackward"; }

 private:
  int64_t dim_;
  std::vector<int64_t> lengths_;
};

// where's gradient goes to a where cond holds, and to b elsewhere.
class WhereBackward final : public Node {
 public:
  WhereBackward(const Tensor& cond, const Tensor& a, const Tensor& b)
      : cond_(cond), a_shape_(a.sizes()), b_shape_(b.sizes()) {}

  TensorList apply(TensorList&& grads) override {
    const Tensor& grad = grads.at(0);
    if (!grad.defined()) return {Tensor(), Tensor(), Tensor()};
    Tensor cond = cond_.unpack(*this);
    Tensor zero = scalar_like(0.0, grad);
    auto routed = [&](bool to_a, const Shape& shape) {
      Tensor g = empty_like(grad);
      kernels::where(cond, to_a ? grad : zero, to_a ? zero : grad, g);
      return autograd::sum_to_shape(g, shape);
    };
    return {Tensor(), autograd::input_needs_grad(*this, 1) ? routed(true, a_shape_) : Tensor(),
            autograd::input_needs_grad(*this, 2) ? routed(false, b_shape_) : Tensor()};
  }
  std::string name() const override { return "WhereBackward"; }
  void release_saved() override { cond_.reset(); }

 private:
  SavedTensor cond_;
  Shape a_shape_, b_shape_;
};

// "[2, *, 4]": the shape cat expects, with the joined dim left free.
std::string expected_shape(const Shape& sizes, int64_t dim) {
  std::string out = "[";
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (d) out += ", ";
    out += static_cast<int64_t>(d) == dim ? "*" : std::to_string(sizes[d]);
  }
  return out + "]";
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  autograd::check_compatible("cat", tensors);
  const Tensor& first = tensors[0];
  DUET_CHECK(first.dim() > 0, "cat: cannot concatenate 0-d tensors (", first.describe(), "); use stack");
  dim = normalize_dim(dim, first.dim(), "cat");
  Shape shape = first.sizes();
  shape[static_cast<size_t>(dim)] = 0;
  std::vector<int64_t> lengths;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    bool matches = t.dim() == first.dim();
    for (int64_t d = 0; matches && d < t.dim(); ++d) matches = d == dim || t.size(d) == first.size(d);
    DUET_CHECK(matches, "cat: tensor ", i, " is ", t.describe(), " but tensor 0 is ", first.describe(), "; along dim ",
               dim, " every tensor must have shape ", expected_shape(first.sizes(), dim));
    lengths.push_back(t.size(dim));
    shape[static_cast<size_t>(dim)] += t.size(dim);
  }
  Tensor out = empty(shape, autograd::options_of(first));
  int64_t start = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (lengths[i] > 0) kernels::copy(tensors[i], out.narrow(dim, start, lengths[i]));
    start += lengths[i];
  }
  TensorList inputs(tensors.begin(), tensors.end());
  if (autograd::needs_grad(inputs)) {
    autograd::record(std::make_shared<CatBackward>(dim, std::move(lengths)), inputs, {out});
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  autograd::check_compatible("stack", tensors);
  dim = normalize_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> unsqueezed;
  for (size_t i = 0; i < tensors.size(); ++i) {
    DUET_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack: tensor ", i, " is ", tensors[i].describe(),
               " but tensor 0 is ", tensors[0].describe(), "; stack needs equal shapes");
    unsqueezed.push_back(tensors[i].unsqueeze(dim));
  }
  return cat(unsqueezed, dim);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  autograd::check_defined("split", x);
  DUET_CHECK(x.dim() > 0, "split: cannot split a 0-d tensor");
  dim = normalize_dim(dim, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    DUET_CHECK(s >= 0, "split: negative size in ", shape_str(sizes));
    total += s;
  }
  DUET_CHECK(total == x.size(dim), "split: sizes ", shape_str(sizes), " add up to ", total, ", but dim ", dim, " of ",
             x.describe(), " has size ", x.size(dim));
  std::vector<Tensor> pieces;
  int64_t start = 0;
  for (int64_t s : sizes) {
    pieces.push_back(x.narrow(dim, start, s));
    start += s;
  }
  return pieces;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  autograd::check_defined("split", x);
  DUET_CHECK(x.dim() > 0, "split: cannot split a 0-d tensor");
  dim = normalize_dim(dim, x.dim(), "split");
  const int64_t length = x.size(dim);
  DUET_CHECK(split_size > 0 || (split_size == 0 && length == 0), "split: split_size must be positive, got ", split_size,
             " for ", x.describe());
  if (length == 0) return {x.narrow(dim, 0, 0)};  // like torch: one empty piece
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < length; start += split_size) sizes.push_back(std::min(split_size, length - start));
  return split(x, sizes, dim);
}

std::vector<int64_t> chunk_sizes(int64_t length, int64_t chunks) {
  DUET_CHECK(chunks > 0, "chunk: the number of chunks must be positive, got ", chunks);
  DUET_CHECK(length >= 0, "chunk: negative length ", length);
  if (length == 0) return std::vector<int64_t>(static_cast<size_t>(chunks), 0);
  const int64_t size = (length + chunks - 1) / chunks;
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < length; start += size) sizes.push_back(std::min(size, length - start));
  return sizes;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  autograd::check_defined("chunk", x);
  DUET_CHECK(x.dim() > 0, "chunk: cannot chunk a 0-d tensor");
  return split(x, chunk_sizes(x.size(normalize_dim(dim, x.dim(), "chunk")), chunks), dim);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  autograd::check_same_device("where", cond, a);
  autograd::check_compatible("where", a, b);
  DUET_CHECK(cond.dtype() == DType::u8, "where: the condition must be u8 (a comparison's result), got ",
             cond.describe());
  Shape shape = broadcast_shapes(broadcast_shapes(cond.sizes(), a.sizes(), "where"), b.sizes(), "where");
  Tensor out = empty(shape, autograd::options_of(a));
  kernels::where(cond, a, b, out);
  if (autograd::needs_grad({a, b})) {
    autograd::record(std::make_shared<WhereBackward>(cond, a, b), {cond, a, b}, {out});
  }
  return out;
}

}  // namespace duet
