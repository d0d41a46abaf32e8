// The CPU kernels: one function per entry of the kernel table (kernels/backend.h), each declared
// with the type of its namesake in kernels.h, optim_kernels.h or nn_kernels.h, whose contract it
// keeps, and defined in the file named above it. cpu_backend.cpp puts them in the CPU table.
#pragma once

#include "duet/kernels/backend.h"

namespace duet::kernels::cpu {

// elementwise_unary.cpp
decltype(kernels::unary) unary;
decltype(kernels::unary_backward) unary_backward;
// elementwise_binary.cpp
decltype(kernels::binary) binary;
decltype(kernels::where) where;
// elementwise_binary_backward.cpp
decltype(kernels::binary_backward) binary_backward;
// copy.cpp
decltype(kernels::copy) copy;
// fill.cpp
decltype(kernels::fill) fill;
decltype(kernels::arange) arange;
// reduce.cpp
decltype(kernels::reduce) reduce;
// matmul.cpp
decltype(kernels::matmul) matmul;
// random.cpp
decltype(kernels::uniform) uniform;
decltype(kernels::normal) normal;
// optim_update.cpp
decltype(kernels::sgd_update) sgd_update;
decltype(kernels::adam_update) adam_update;
// conv2d.cpp
decltype(kernels::conv2d_forward) conv2d_forward;
decltype(kernels::conv2d_backward_input) conv2d_backward_input;
decltype(kernels::conv2d_backward_weight) conv2d_backward_weight;
decltype(kernels::conv2d_avg_pool2d_forward) conv2d_avg_pool2d_forward;
decltype(kernels::conv2d_avg_pool2d_backward) conv2d_avg_pool2d_backward;
// pool2d.cpp
decltype(kernels::max_pool2d_forward) max_pool2d_forward;
decltype(kernels::max_pool2d_backward) max_pool2d_backward;
decltype(kernels::avg_pool2d_forward) avg_pool2d_forward;
decltype(kernels::avg_pool2d_backward) avg_pool2d_backward;
decltype(kernels::adaptive_avg_pool2d_forward) adaptive_avg_pool2d_forward;
decltype(kernels::adaptive_avg_pool2d_backward) adaptive_avg_pool2d_backward;
decltype(kernels::adaptive_max_pool2d_forward) adaptive_max_pool2d_forward;
// batch_norm.cpp
decltype(kernels::batch_norm_forward) batch_norm_forward;
decltype(kernels::batch_norm_backward) batch_norm_backward;
// softmax.cpp
decltype(kernels::softmax_forward) softmax_forward;
decltype(kernels::softmax_backward) softmax_backward;
decltype(kernels::log_softmax_forward) log_softmax_forward;
decltype(kernels::log_softmax_backward) log_softmax_backward;
// cross_entropy.cpp
decltype(kernels::cross_entropy_forward) cross_entropy_forward;
decltype(kernels::cross_entropy_backward) cross_entropy_backward;

}  // namespace duet::kernels::cpu
