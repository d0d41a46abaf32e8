// Backend: one implementation of the kernel interface per device type.
//
// kernels/cpu provides the CPU backend; kernels/cuda registers the CUDA one when it is built.
// The free functions of kernels.h pick the backend from the output's device (dispatch.cpp),
// which is the one place each op dispatches on the device type.
#pragma once

#include "duet/kernels/kernels.h"
#include "duet/kernels/optim_kernels.h"

namespace duet::kernels {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual void unary(UnaryOp op, const Tensor& in, const Tensor& out) = 0;
  virtual void unary_backward(UnaryOp op, const Tensor& grad, const Tensor& in, const Tensor& out,
                              const Tensor& grad_in) = 0;
  virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  virtual void binary_backward(BinaryOp op, const Tensor& grad, const Tensor& a, const Tensor& b,
                               const Tensor& out, const Tensor& grad_a, const Tensor& grad_b) = 0;
  virtual void reduce(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims,
                      const Tensor& out) = 0;
  virtual void matmul(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  virtual void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // Copies whose src and dst are both on this backend's device type.
  virtual void copy(const Tensor& src, const Tensor& dst) = 0;
  virtual void fill(const Tensor& out, double value) = 0;
  virtual void arange(const Tensor& out, double start, double step) = 0;
  virtual void uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high) = 0;
  virtual void normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double stddev) = 0;
  // The fused optimizer updates; optim_dispatch.cpp has checked the operands (optim_kernels.h).
  virtual void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                          const SgdUpdateArgs& args) = 0;
  virtual void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                           const Tensor& exp_avg_sq, const AdamUpdateArgs& args) = 0;
};

Backend& cpu_backend();
// Throws "built without CUDA" in a CPU-only build.
Backend& backend_for(DeviceType type);
void register_backend(DeviceType type, Backend* backend);

// Copies between a host tensor and a device tensor (either direction). The CUDA backend
// registers it; dispatch.cpp routes cross-device copy() calls to it.
using CrossDeviceCopy = void (*)(const Tensor& src, const Tensor& dst);
void register_cross_device_copy(CrossDeviceCopy fn);

}  // namespace duet::kernels
