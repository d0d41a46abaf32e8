// Tensor: a cheap, shared handle to a strided view of a Storage.
//
// core defines the data layout and the raw (non-differentiable) metadata accessors.
// Every member that computes (views, conversions, printing, autograd) is declared here for
// ergonomics and defined in autograd/, which records graph nodes; see docs/architecture.md.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "duet/core/device.h"
#include "duet/core/dtype.h"
#include "duet/core/shape.h"
#include "duet/core/storage.h"

namespace duet {

namespace autograd {
struct AutogradMeta;
class Node;
}  // namespace autograd

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape sizes;
  Shape strides;       // in elements
  int64_t offset = 0;  // in elements, from storage->data()
  DType dtype = DType::f32;
  // Null for plain data; created when the tensor requires grad or is produced by a graph node.
  std::shared_ptr<autograd::AutogradMeta> autograd;
};

class Tensor;
struct ValuesIndices;

// The dims a reduction runs over, as PyTorch takes them: one (x.sum(1)), several
// (x.sum({0, 2})), or none for all of them (x.sum()).
struct Dims {
  Dims() = default;
  Dims(int64_t dim) : list{dim} {}
  Dims(std::initializer_list<int64_t> dims) : list(dims) {}
  Dims(std::vector<int64_t> dims) : list(std::move(dims)) {}
  std::vector<int64_t> list;
};

// A gradient hook sees the incoming gradient. It returns a replacement, or an undefined
// Tensor to keep the gradient as it is.
using GradHook = std::function<Tensor(const Tensor& grad)>;
// Runs on a leaf right after its .grad was accumulated (strategy B's bucketed all-reduce).
using PostAccumulateGradHook = std::function<void(const Tensor& leaf)>;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata (core) ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& sizes() const { return impl().sizes; }
  const Shape& shape() const { return impl().sizes; }
  const Shape& strides() const { return impl().strides; }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(impl().sizes.size()); }
  int64_t numel() const { return duet::numel(impl().sizes); }
  int64_t offset() const { return impl().offset; }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  size_t element_size() const { return duet::element_size(dtype()); }
  // The bytes its elements take (not its storage's: a view may see part of that).
  int64_t nbytes() const { return numel() * static_cast<int64_t>(element_size()); }
  bool is_contiguous() const;
  // Address of element [0, 0, ...]. Device memory for CUDA tensors.
  void* data_ptr() const;
  // Typed address of element [0, 0, ...]; throws if T does not match dtype().
  template <class T> T* data() const;
  const std::shared_ptr<Storage>& storage() const { return impl().storage; }
  TensorImpl& impl() const;
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  // "f32[2, 3] on cpu:0", for error messages.
  std::string describe() const;

  // Shares storage with this tensor; sizes/strides/offset in elements. No autograd.
  Tensor as_strided(Shape sizes, Shape strides, int64_t offset) const;

  // ---- version counter (shared by all views of one storage) ----
  uint64_t version() const { return storage()->version(); }
  void bump_version() const { storage()->bump_version(); }

  // ---- views (differentiable; share storage) ----
  Tensor view(Shape sizes) const;     // requires a compatible stride layout
  Tensor reshape(Shape sizes) const;  // a view when possible, a copy otherwise
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;  // transpose of a 2-D tensor
  Tensor permute(std::vector<int64_t> dims) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor expand(Shape sizes) const;  // -1 keeps a size
  Tensor contiguous() const;         // this tensor when already contiguous, else a copy

  // ---- conversions ----
  Tensor to(Device device) const;  // differentiable; returns *this when already there
  Tensor to(DType dtype) const;    // differentiable between floating types
  Tensor clone() const;            // a differentiable contiguous copy
  // A contiguous copy in page-locked host memory (this tensor when already pinned), so that
  // to(cuda) from it runs asynchronously. Host tensors only; needs a CUDA device (throws
  // "built without CUDA" or "no CUDA device is available" otherwise).
  Tensor pin_memory() const;
  bool is_pinned() const;  // its storage is page-locked host memory
  template <class T> T item() const;
  template <class T> std::vector<T> to_vector() const;
  std::string str() const;  // PyTorch-style printing

  // ---- autograd ----
  bool requires_grad() const;
  // Marks a leaf as requiring a gradient. Throws for a non-leaf or a non-floating dtype.
  const Tensor& requires_grad_(bool enabled = true) const;
  bool is_leaf() const;
  Tensor grad() const;  // undefined until backward reaches this leaf
  void set_grad(const Tensor& grad) const;
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  // Backpropagates from this tensor. `gradient` may be omitted for a one-element tensor.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  Tensor detach() const;  // shares storage, cut from the graph
  void register_hook(GradHook hook) const;
  void register_post_accumulate_grad_hook(PostAccumulateGradHook hook) const;

  // ---- in-place writes (not recorded by autograd; each bumps the version) ----
  // They throw on a tensor that requires grad while grad mode is on.
  const Tensor& zero_() const;
  const Tensor& fill_(double value) const;
  const Tensor& copy_(const Tensor& src) const;  // broadcasts and casts src
  const Tensor& add_(const Tensor& other, double alpha = 1.0) const;
  const Tensor& mul_(double factor) const;

  // ---- method twins of the ops, as PyTorch's Tensor methods ----
  // Each calls the op of the same name with this tensor first (x.sum(1) is sum(x, {1}), and
  // logits.argmax(1).eq(y).sum() counts the right predictions), so it computes, records and
  // fails exactly as the op does. Declared here for ergonomics, like the members above, but
  // defined beside their ops, above core: autograd/tensor_methods.cpp, and
  // nn/functional_softmax.cpp for softmax and log_softmax; libduet links them as one.
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor abs() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor clamp(std::optional<double> min, std::optional<double> max = std::nullopt) const;
  Tensor add(const Tensor& other) const;
  Tensor sub(const Tensor& other) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor add(double other) const;  // the operators' forms: other as a 0-d tensor of this dtype
  Tensor sub(double other) const;
  Tensor mul(double other) const;
  Tensor div(double other) const;
  Tensor floor_divide(const Tensor& other) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(double exponent) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor eq(const Tensor& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor le(const Tensor& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor where(const Tensor& condition, const Tensor& other) const;  // where(condition, *this, other)
  Tensor sum(Dims dims = {}, bool keepdim = false) const;
  Tensor mean(Dims dims = {}, bool keepdim = false) const;
  Tensor max() const;                                       // over every element, as x.max()
  Tensor amax(Dims dims = {}, bool keepdim = false) const;  // duet::max over dims
  Tensor min() const;
  ValuesIndices min(int64_t dim, bool keepdim = false) const;
  Tensor amin(Dims dims = {}, bool keepdim = false) const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor argmin(int64_t dim, bool keepdim = false) const;
  Tensor var(Dims dims = {}, bool unbiased = true, bool keepdim = false) const;
  Tensor std(Dims dims = {}, bool unbiased = true, bool keepdim = false) const;
  Tensor logsumexp(Dims dims, bool keepdim = false) const;
  Tensor matmul(const Tensor& other) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(const std::vector<int64_t>& sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;

 private:
  // Copies the elements, as T, into a contiguous host buffer of numel() values.
  void copy_to_host(void* dst, DType as) const;

  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& t);

// torch.min(x, dim)'s result: the values and the index of each (x.min(dim), duet::min).
struct ValuesIndices {
  Tensor values;
  Tensor indices;  // i64
};

// An uninitialised contiguous tensor, with no autograd state: core's one allocation helper,
// for kernels-level code that cannot use the factories of autograd/factory.h.
Tensor empty_contiguous(const Shape& sizes, DType dtype, Device device);

// ---- template definitions ----

template <class T> T* Tensor::data() const {
  DUET_CHECK(dtype() == dtype_of<T>(), "data<", dtype_name(dtype_of<T>()), ">() on a tensor of dtype ",
             dtype_name(dtype()));
  return static_cast<T*>(data_ptr());
}

template <class T> std::vector<T> Tensor::to_vector() const {
  std::vector<T> out(static_cast<size_t>(numel()));
  copy_to_host(out.data(), dtype_of<T>());
  return out;
}

template <class T> T Tensor::item() const {
  DUET_CHECK(numel() == 1, "item(): expected a tensor with one element, got ", describe());
  T value;
  copy_to_host(&value, dtype_of<T>());
  return value;
}

}  // namespace duet
