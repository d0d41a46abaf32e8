// The CPU backend: kernels::cpu's functions behind the Backend interface.
#pragma once

#include "duet/kernels/backend.h"

namespace duet::kernels::cpu {

// elementwise.cpp
void unary(UnaryOp op, const Tensor& in, const Tensor& out);
void unary_backward(UnaryOp op, const Tensor& grad, const Tensor& in, const Tensor& out,
                    const Tensor& grad_in);
void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
void binary_backward(BinaryOp op, const Tensor& grad, const Tensor& a, const Tensor& b,
                     const Tensor& out, const Tensor& grad_a, const Tensor& grad_b);
void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
// copy.cpp
void copy(const Tensor& src, const Tensor& dst);
// fill.cpp
void fill(const Tensor& out, double value);
void arange(const Tensor& out, double start, double step);
// reduce.cpp
void reduce(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out);
// matmul.cpp
void matmul(const Tensor& a, const Tensor& b, const Tensor& out);
// random.cpp
void uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high);
void normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double stddev);
// optim_update.cpp
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const SgdUpdateArgs& args);
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const AdamUpdateArgs& args);

class CpuBackend final : public Backend {
 public:
  void unary(UnaryOp op, const Tensor& in, const Tensor& out) override;
  void unary_backward(UnaryOp op, const Tensor& grad, const Tensor& in, const Tensor& out,
                      const Tensor& grad_in) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void binary_backward(BinaryOp op, const Tensor& grad, const Tensor& a, const Tensor& b,
                       const Tensor& out, const Tensor& grad_a, const Tensor& grad_b) override;
  void reduce(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims,
              const Tensor& out) override;
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void copy(const Tensor& src, const Tensor& dst) override;
  void fill(const Tensor& out, double value) override;
  void arange(const Tensor& out, double start, double step) override;
  void uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high) override;
  void normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double stddev) override;
  void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                  const SgdUpdateArgs& args) override;
  void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                   const AdamUpdateArgs& args) override;
};

}  // namespace duet::kernels::cpu
