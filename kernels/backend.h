// Backend: the kernels of one device type, as one table of functions.
//
// Each entry has the signature and the contract of its namesake in kernels.h, optim_kernels.h or
// nn_kernels.h. Those free functions are the only callers: they check what every backend needs
// checked (dispatch.cpp, optim_dispatch.cpp, nn_dispatch.cpp) and call the entry of their
// output's device type. kernels/cpu/cpu_backend.cpp fills the CPU table with kernels::cpu's
// functions; kernels/cuda/cuda_backend.cpp fills the CUDA table and registers it when the
// library is loaded, so core and the CPU code never include a CUDA header.
#pragma once

#include "duet/core/device.h"
#include "duet/kernels/kernels.h"
#include "duet/kernels/nn_kernels.h"
#include "duet/kernels/optim_kernels.h"

namespace duet::kernels {

struct Backend {
  // kernels.h. `copy` gets only copies whose src and dst are both on this device type.
  decltype(&kernels::unary) unary;
  decltype(&kernels::unary_backward) unary_backward;
  decltype(&kernels::binary) binary;
  decltype(&kernels::binary_backward) binary_backward;
  decltype(&kernels::reduce) reduce;
  decltype(&kernels::matmul) matmul;
  decltype(&kernels::where) where;
  decltype(&kernels::copy) copy;
  decltype(&kernels::fill) fill;
  decltype(&kernels::arange) arange;
  decltype(&kernels::uniform) uniform;
  decltype(&kernels::normal) normal;
  // optim_kernels.h
  decltype(&kernels::sgd_update) sgd_update;
  decltype(&kernels::adam_update) adam_update;
  // nn_kernels.h
  decltype(&kernels::conv2d_forward) conv2d_forward;
  decltype(&kernels::conv2d_backward_input) conv2d_backward_input;
  decltype(&kernels::conv2d_backward_weight) conv2d_backward_weight;
  decltype(&kernels::max_pool2d_forward) max_pool2d_forward;
  decltype(&kernels::max_pool2d_backward) max_pool2d_backward;
  decltype(&kernels::avg_pool2d_forward) avg_pool2d_forward;
  decltype(&kernels::avg_pool2d_backward) avg_pool2d_backward;
  decltype(&kernels::conv2d_avg_pool2d_forward) conv2d_avg_pool2d_forward;
  decltype(&kernels::conv2d_avg_pool2d_backward) conv2d_avg_pool2d_backward;
  decltype(&kernels::adaptive_avg_pool2d_forward) adaptive_avg_pool2d_forward;
  decltype(&kernels::adaptive_avg_pool2d_backward) adaptive_avg_pool2d_backward;
  decltype(&kernels::adaptive_max_pool2d_forward) adaptive_max_pool2d_forward;
  decltype(&kernels::batch_norm_forward) batch_norm_forward;
  decltype(&kernels::batch_norm_backward) batch_norm_backward;
  decltype(&kernels::softmax_forward) softmax_forward;
  decltype(&kernels::softmax_backward) softmax_backward;
  decltype(&kernels::log_softmax_forward) log_softmax_forward;
  decltype(&kernels::log_softmax_backward) log_softmax_backward;
  decltype(&kernels::cross_entropy_forward) cross_entropy_forward;
  decltype(&kernels::cross_entropy_backward) cross_entropy_backward;
};

const Backend& cpu_backend();
// The table of `device`'s type. `op` names the caller in the error thrown when there is none:
// "conv2d_forward on cuda:0: duet was built without CUDA".
const Backend& backend_for(Device device, const char* op);
void register_backend(DeviceType type, const Backend* backend);

// Copies between a host tensor and a device tensor (either direction). The CUDA backend
// registers it; dispatch.cpp routes cross-device copy() calls to it.
using CrossDeviceCopy = void (*)(const Tensor& src, const Tensor& dst);
void register_cross_device_copy(CrossDeviceCopy fn);

}  // namespace duet::kernels
