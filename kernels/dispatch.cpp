// The kernel tables' registry, and the one place each tensor kernel (kernels.h) dispatches on
// the device type: the table of its output's device.
#include <array>
#include <atomic>

#include "duet/core/error.h"
#include "duet/kernels/backend.h"
#include "duet/kernels/cpu/thread_pool.h"
#include "duet/kernels/cuda/runtime.h"
#include "duet/kernels/profiler.h"

namespace duet::kernels {
namespace {

constexpr size_t kDeviceTypes = 2;

std::array<std::atomic<const Backend*>, kDeviceTypes>& backends() {
  static std::array<std::atomic<const Backend*>, kDeviceTypes> tables{&cpu_backend(), nullptr};
  return tables;
}

std::atomic<CrossDeviceCopy>& cross_device_copy() {
  static std::atomic<CrossDeviceCopy> fn{nullptr};
  return fn;
}

}  // namespace

// One switch per enum, with no default, so -Wswitch warns of an op added without a name here.
const char* name(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg:
      return "neg";
    case UnaryOp::exp:
      return "exp";
    case UnaryOp::log:
      return "log";
    case UnaryOp::sqrt:
      return "sqrt";
    case UnaryOp::abs:
      return "abs";
    case UnaryOp::relu:
      return "relu";
    case UnaryOp::sigmoid:
      return "sigmoid";
    case UnaryOp::tanh:
      return "tanh";
  }
  return "unknown unary op";
}

const char* name(BinaryOp op) {
  switch (op) {
    case BinaryOp::add:
      return "add";
    case BinaryOp::sub:
      return "sub";
    case BinaryOp::mul:
      return "mul";
    case BinaryOp::div:
      return "div";
    case BinaryOp::floor_divide:
      return "floor_divide";
    case BinaryOp::pow:
      return "pow";
    case BinaryOp::maximum:
      return "maximum";
    case BinaryOp::minimum:
      return "minimum";
    case BinaryOp::eq:
      return "eq";
    case BinaryOp::ne:
      return "ne";
    case BinaryOp::lt:
      return "lt";
    case BinaryOp::le:
      return "le";
    case BinaryOp::gt:
      return "gt";
    case BinaryOp::ge:
      return "ge";
  }
  return "unknown binary op";
}

const char* name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::mean:
      return "mean";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
    case ReduceOp::argmax:
      return "argmax";
    case ReduceOp::argmin:
      return "argmin";
    case ReduceOp::logsumexp:
      return "logsumexp";
  }
  return "unknown reduce op";
}

void register_backend(DeviceType type, const Backend* backend) { backends()[static_cast<size_t>(type)].store(backend); }

const Backend& backend_for(Device device, const char* op) {
  const Backend* backend = backends()[static_cast<size_t>(device.type)].load();
  if (backend) return *backend;
  DUET_CHECK(device.is_cuda(), op, " on ", device, ": no kernel backend registered");
  // A CUDA build registers its table when the library is loaded: only code running before
  // that (another library's static initialiser) can get here.
  DUET_CHECK(!cuda::is_built(), op, " on ", device, ": the CUDA backend is not registered yet");
  DUET_FAIL(op, " on ", device, ": duet was built without CUDA");
}

void register_cross_device_copy(CrossDeviceCopy fn) { cross_device_copy().store(fn); }

void unary(UnaryOp op, const Tensor& in, const Tensor& out) {
  profiler::Scope profile(name(op));
  backend_for(out.device(), name(op)).unary(op, in, out);
}

void unary_backward(UnaryOp op, const Tensor& grad, const Tensor& in, const Tensor& out, const Tensor& grad_in) {
  profiler::Scope profile(name(op), "backward");
  backend_for(grad_in.device(), name(op)).unary_backward(op, grad, in, out, grad_in);
}

void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  profiler::Scope profile(name(op));
  backend_for(out.device(), name(op)).binary(op, a, b, out);
}

void binary_backward(BinaryOp op, const Tensor& grad, const Tensor& a, const Tensor& b, const Tensor& out,
                     const Tensor& grad_a, const Tensor& grad_b) {
  if (!grad_a.defined() && !grad_b.defined()) return;
  profiler::Scope profile(name(op), "backward");
  backend_for(grad.device(), name(op)).binary_backward(op, grad, a, b, out, grad_a, grad_b);
}

void reduce(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out) {
  profiler::Scope profile(name(op));
  backend_for(out.device(), name(op)).reduce(op, in, dims, out);
}

void matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  profiler::Scope profile(__func__);
  backend_for(out.device(), __func__).matmul(a, b, out);
}

void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  profiler::Scope profile(__func__);
  backend_for(out.device(), __func__).where(cond, a, b, out);
}

void copy(const Tensor& src, const Tensor& dst) {
  // A copy to or from a GPU mostly waits for the work already queued there (item(), to(cpu),
  // pageable sources): timed apart, so that wait is not reported as the device copy kernel's.
  const bool across_gpu = src.device() != dst.device() && (src.device().is_cuda() || dst.device().is_cuda());
  profiler::Scope profile(across_gpu ? "copy across devices" : __func__);
  if (src.device().type == dst.device().type) {
    // Two logical CPU devices share host memory: a plain copy.
    backend_for(dst.device(), __func__).copy(src, dst);
    return;
  }
  CrossDeviceCopy fn = cross_device_copy().load();
  DUET_CHECK(fn != nullptr, "copy from ", src.device(), " to ", dst.device(),
             ": no cross-device copy registered (duet built without CUDA?)");
  fn(src, dst);
}

void fill(const Tensor& out, double value) {
  profiler::Scope profile(__func__);
  backend_for(out.device(), __func__).fill(out, value);
}

void arange(const Tensor& out, double start, double step) {
  profiler::Scope profile(__func__);
  backend_for(out.device(), __func__).arange(out, start, step);
}

void uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high) {
  profiler::Scope profile(__func__);
  backend_for(out.device(), __func__).uniform(out, seed, offset, low, high);
}

void normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double stddev) {
  profiler::Scope profile(__func__);
  backend_for(out.device(), __func__).normal(out, seed, offset, mean, stddev);
}

void set_num_threads(int threads) { cpu::set_pool_size(threads); }

int num_threads() { return cpu::pool_size(); }

}  // namespace duet::kernels
