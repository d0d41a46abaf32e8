// The CPU table: every entry is the kernels::cpu function of the same name (cpu_backend.h).
#include "duet/kernels/cpu/cpu_backend.h"

namespace duet::kernels {

const Backend& cpu_backend() {
  static constexpr Backend table{
      .unary = cpu::unary,
      .unary_backward = cpu::unary_backward,
      .binary = cpu::binary,
      .binary_backward = cpu::binary_backward,
      .reduce = cpu::reduce,
      .matmul = cpu::matmul,
      .where = cpu::where,
      .copy = cpu::copy,
      .fill = cpu::fill,
      .arange = cpu::arange,
      .uniform = cpu::uniform,
      .normal = cpu::normal,
      .sgd_update = cpu::sgd_update,
      .adam_update = cpu::adam_update,
      .conv2d_forward = cpu::conv2d_forward,
      .conv2d_backward_input = cpu::conv2d_backward_input,
      .conv2d_backward_weight = cpu::conv2d_backward_weight,
      .max_pool2d_forward = cpu::max_pool2d_forward,
      .max_pool2d_backward = cpu::max_pool2d_backward,
      .avg_pool2d_forward = cpu::avg_pool2d_forward,
      .avg_pool2d_backward = cpu::avg_pool2d_backward,
      .conv2d_avg_pool2d_forward = cpu::conv2d_avg_pool2d_forward,
      .conv2d_avg_pool2d_backward = cpu::conv2d_avg_pool2d_backward,
      .adaptive_avg_pool2d_forward = cpu::adaptive_avg_pool2d_forward,
      .adaptive_avg_pool2d_backward = cpu::adaptive_avg_pool2d_backward,
      .adaptive_max_pool2d_forward = cpu::adaptive_max_pool2d_forward,
      .batch_norm_forward = cpu::batch_norm_forward,
      .batch_norm_backward = cpu::batch_norm_backward,
      .softmax_forward = cpu::softmax_forward,
      .softmax_backward = cpu::softmax_backward,
      .log_softmax_forward = cpu::log_softmax_forward,
      .log_softmax_backward = cpu::log_softmax_backward,
      .cross_entropy_forward = cpu::cross_entropy_forward,
      .cross_entropy_backward = cpu::cross_entropy_backward,
  };
  return table;
}

}  // namespace duet::kernels
