// Conversions between devices and dtypes, clone, pin_memory, and the host copy behind
// item()/to_vector().
// Every conversion is one kernels::copy into a fresh contiguous tensor; kernels::copy is the
// only kernel that moves data between devices.
#include <cstring>

#include "duet/autograd/checks.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/function.h"
#include "duet/kernels/kernels.h"

namespace duet {
namespace {

using autograd::Node;
using autograd::TensorList;

// A contiguous copy of `src` with the given dtype on the given device (no graph).
Tensor converted(const Tensor& src, DType dtype, Device device) {
  Tensor out = empty(src.sizes(), {.dtype = dtype, .device = device});
  if (out.numel() > 0) kernels::copy(src, out);
  return out;
}

// The backward of every copy (to(device), to(dtype), clone): the gradient goes back to the
// source's dtype and device.
class CopyBackward final : public Node {
 public:
  CopyBackward(std::string name, const Tensor& source)
      : name_(std::move(name)), dtype_(source.dtype()), device_(source.device()) {}
  TensorList apply(TensorList&& grads) override {
    const Tensor& grad = grads.at(0);
    if (!grad.defined() || (grad.dtype() == dtype_ && grad.device() == device_)) return {grad};
    return {converted(grad, dtype_, device_)};
  }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  DType dtype_;
  Device device_;
};

// Records `out`, a fresh copy of `src`, in the graph when src needs a gradient.
Tensor recorded_copy(const Tensor& src, Tensor out, const char* node_name) {
  // Only floating tensors carry gradients; a cast to an integer type ends the graph.
  if (is_floating(out.dtype()) && autograd::needs_grad({src})) {
    autograd::record(std::make_shared<CopyBackward>(node_name, src), {src}, {out});
  }
  return out;
}

Tensor differentiable_copy(const Tensor& src, DType dtype, Device device, const char* node_name) {
  return recorded_copy(src, converted(src, dtype, device), node_name);
}

}  // namespace

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  return differentiable_copy(*this, dtype(), device, "ToDeviceBackward");
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == this->dtype()) return *this;
  return differentiable_copy(*this, dtype, device(), "ToDTypeBackward");
}

Tensor Tensor::clone() const { return differentiable_copy(*this, dtype(), device(), "CloneBackward"); }

Tensor Tensor::pin_memory() const {
  DUET_CHECK(device().is_cpu(), "pin_memory: only host tensors can be pinned, got ", describe());
  if (is_pinned()) return *this;
  Tensor out = empty(sizes(), {.dtype = dtype(), .device = device(), .pin_memory = true});
  if (out.numel() > 0) kernels::copy(*this, out);
  return recorded_copy(*this, std::move(out), "PinMemoryBackward");
}

void Tensor::copy_to_host(void* dst, DType as) const {
  const size_t bytes = static_cast<size_t>(numel()) * duet::element_size(as);
  if (bytes == 0) return;
  const bool ready = device().is_cpu() && dtype() == as && is_contiguous();
  Tensor host = ready ? *this : converted(*this, as, cpu());
  std::memcpy(dst, host.data_ptr(), bytes);
}

}  // namespace duet
