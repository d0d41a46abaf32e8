// The CUDA backend: checks that every operand is on the output's device, makes that device
// current and runs the launcher on its stream. Registered at load time (no CUDA call there).
//
// Reductions are duet's own kernels (reduce.cu), matmul goes to cuBLAS (matmul.cpp).
#include "duet/kernels/backend.h"
#include "duet/kernels/cuda/cross_device_copy.h"
#include "duet/kernels/cuda/launchers.h"
#include "duet/kernels/cuda/on_device.h"

namespace duet::cuda {
namespace {

using kernels::BinaryOp;
using kernels::ReduceOp;
using kernels::UnaryOp;

class CudaBackend final : public kernels::Backend {
 public:
  void unary(UnaryOp op, const Tensor& in, const Tensor& out) override {
    OnDevice on(kernels::name(op), out, {&in});
    launch_unary(op, in, out, on.stream());
  }

  void unary_backward(UnaryOp op, const Tensor& grad, const Tensor& in, const Tensor& out,
                      const Tensor& grad_in) override {
    OnDevice on(kernels::name(op), grad_in, {&grad, &in, &out});
    launch_unary_backward(op, grad, in, out, grad_in, on.stream());
  }

  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override {
    OnDevice on(kernels::name(op), out, {&a, &b});
    launch_binary(op, a, b, out, on.stream());
  }

  void binary_backward(BinaryOp op, const Tensor& grad, const Tensor& a, const Tensor& b,
                       const Tensor& out, const Tensor& grad_a, const Tensor& grad_b) override {
    OnDevice on(kernels::name(op), grad, {&a, &b, &out, &grad_a, &grad_b});
    if (grad_a.defined()) launch_binary_backward(op, /*wrt_a=*/true, grad, a, b, out, grad_a, on.stream());
    if (grad_b.defined()) launch_binary_backward(op, /*wrt_a=*/false, grad, a, b, out, grad_b, on.stream());
  }

  void reduce(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out) override {
    OnDevice on(kernels::name(op), out, {&in});
    launch_reduce(op, in, dims, out, on.stream());
  }

  void matmul(const Tensor& a, const Tensor& b, const Tensor& out) override {
    OnDevice on("matmul", out, {&a, &b});
    launch_matmul(a, b, out, on.device(), on.stream());
  }

  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) override {
    OnDevice on("where", out, {&cond, &a, &b});
    launch_where(cond, a, b, out, on.stream());
  }

  void copy(const Tensor& src, const Tensor& dst) override {
    // dispatch.cpp sends every CUDA -> CUDA copy here, also between two logical devices.
    if (src.device() != dst.device()) {
      copy_across_devices(src, dst);
      return;
    }
    OnDevice on("copy", dst, {&src});
    launch_copy(src, dst, on.stream());
  }

  void fill(const Tensor& out, double value) override {
    OnDevice on("fill", out, {});
    launch_fill(out, value, on.stream());
  }

  void arange(const Tensor& out, double start, double step) override {
    OnDevice on("arange", out, {});
    launch_arange(out, start, step, on.stream());
  }

  void uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high) override {
    OnDevice on("uniform", out, {});
    launch_uniform(out, seed, offset, low, high, on.stream());
  }

  void normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double stddev) override {
    OnDevice on("normal", out, {});
    launch_normal(out, seed, offset, mean, stddev, on.stream());
  }

  void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                  const kernels::SgdUpdateArgs& args) override {
    OnDevice on("sgd_update", param, {&grad, &momentum_buffer});
    launch_sgd_update(param, grad, momentum_buffer, args, on.stream());
  }

  void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                   const kernels::AdamUpdateArgs& args) override {
    OnDevice on("adam_update", param, {&grad, &exp_avg, &exp_avg_sq});
    launch_adam_update(param, grad, exp_avg, exp_avg_sq, args, on.stream());
  }
};

[[maybe_unused]] const bool registered = [] {
  // Leaked on purpose: kernels may run from static destructors after this file's statics die.
  kernels::register_backend(DeviceType::CUDA, new CudaBackend());
  return true;
}();

}  // namespace
}  // namespace duet::cuda
