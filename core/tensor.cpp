#include "duet/core/tensor.h"

#include "duet/core/error.h"

namespace duet {

TensorImpl& Tensor::impl() const {
  DUET_CHECK(impl_ != nullptr, "use of an undefined tensor");
  return *impl_;
}

int64_t Tensor::size(int64_t dim) const {
  return sizes()[static_cast<size_t>(normalize_dim(dim, this->dim(), "size"))];
}

int64_t Tensor::stride(int64_t dim) const {
  return strides()[static_cast<size_t>(normalize_dim(dim, this->dim(), "stride"))];
}

bool Tensor::is_pinned() const { return storage()->is_pinned(); }

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // nothing to stride over, as in PyTorch
  int64_t expected = 1;
  for (size_t i = sizes().size(); i-- > 0;) {
    if (sizes()[i] == 1) continue;
    if (strides()[i] != expected) return false;
    expected *= sizes()[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  return static_cast<char*>(storage()->data()) + offset() * static_cast<int64_t>(element_size());
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined tensor";
  return detail::concat(dtype_name(dtype()), shape_str(sizes()), " on ", device());
}

Tensor Tensor::as_strided(Shape sizes, Shape strides, int64_t offset) const {
  DUET_CHECK(sizes.size() == strides.size(), "as_strided: ", sizes.size(), " sizes but ", strides.size(), " strides");
  auto out = std::make_shared<TensorImpl>();
  out->storage = storage();
  out->sizes = std::move(sizes);
  out->strides = std::move(strides);
  out->offset = offset;
  out->dtype = dtype();
  return Tensor(std::move(out));
}

Tensor empty_contiguous(const Shape& sizes, DType dtype, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(numel(sizes)) * element_size(dtype), device);
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

}  // namespace duet
