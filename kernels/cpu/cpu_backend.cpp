#include "duet/kernels/cpu/cpu_backend.h"

namespace duet::kernels {

namespace cpu {

void CpuBackend::unary(UnaryOp op, const Tensor& in, const Tensor& out) { cpu::unary(op, in, out); }
void CpuBackend::unary_backward(UnaryOp op, const Tensor& grad, const Tensor& in,
                                const Tensor& out, const Tensor& grad_in) {
  cpu::unary_backward(op, grad, in, out, grad_in);
}
void CpuBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  cpu::binary(op, a, b, out);
}
void CpuBackend::binary_backward(BinaryOp op, const Tensor& grad, const Tensor& a,
                                 const Tensor& b, const Tensor& out, const Tensor& grad_a,
                                 const Tensor& grad_b) {
  cpu::binary_backward(op, grad, a, b, out, grad_a, grad_b);
}
void CpuBackend::reduce(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims,
                        const Tensor& out) {
  cpu::reduce(op, in, dims, out);
}
void CpuBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& out) { cpu::matmul(a, b, out); }
void CpuBackend::where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  cpu::where(cond, a, b, out);
}
void CpuBackend::copy(const Tensor& src, const Tensor& dst) { cpu::copy(src, dst); }
void CpuBackend::fill(const Tensor& out, double value) { cpu::fill(out, value); }
void CpuBackend::arange(const Tensor& out, double start, double step) { cpu::arange(out, start, step); }
void CpuBackend::uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high) {
  cpu::uniform(out, seed, offset, low, high);
}
void CpuBackend::normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean,
                        double stddev) {
  cpu::normal(out, seed, offset, mean, stddev);
}
void CpuBackend::sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                            const SgdUpdateArgs& args) {
  cpu::sgd_update(param, grad, momentum_buffer, args);
}
void CpuBackend::adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                             const Tensor& exp_avg_sq, const AdamUpdateArgs& args) {
  cpu::adam_update(param, grad, exp_avg, exp_avg_sq, args);
}

}  // namespace cpu

Backend& cpu_backend() {
  static cpu::CpuBackend instance;
  return instance;
}

}  // namespace duet::kernels
