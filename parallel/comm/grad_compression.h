// Gradient compression (PyTorch DDP's fp16_compress_hook and bf16_compress_hook): DDP's f32
// gradients travel as 16-bit floats, half the bytes of f32 on the wire.
//
// duet's tensors have no 16-bit dtype, so a compressed payload is a u8 tensor of two bytes per
// value holding the 16-bit codes; only a communicator's compressed all-reduce
// (Communicator::all_reduce_compressed_async) reads it as numbers. Casts round to nearest,
// ties to even, as PyTorch's .half() and .bfloat16() do: fp16 overflows to inf and keeps its
// subnormals; bf16 has f32's range; NaN stays NaN.
#pragma once

#include <cstdint>
#include <string>

#include "duet/core/tensor.h"

namespace duet::parallel {

enum class GradCompression : uint8_t { none, fp16, bf16 };

const char* name(GradCompression format);  // "none", "fp16", "bf16"
// From its name; throws a duet::Error naming the choices for anything else.
GradCompression parse_grad_compression(const std::string& text);
// Bytes on the wire for `numel` values of `dtype`: their own size without compression, 2 each
// with it.
int64_t wire_bytes(int64_t numel, DType dtype, GradCompression format);

// One value's 16-bit code and back (fp16 or bf16; not none).
uint16_t encode_value(float value, GradCompression format);
float decode_value(uint16_t code, GradCompression format);
// decode(encode(value)): the value as the wire carries it.
float round_to_wire(float value, GradCompression format);

// The codes of a contiguous f32 tensor's values, as a new u8 tensor of 2 * numel bytes on the
// same device (the cast itself runs on the host).
Tensor encode(const Tensor& values, GradCompression format);
// Writes the values of the codes in `codes` (u8, 2 bytes each) into the contiguous f32 `values`.
void decode(const Tensor& codes, const Tensor& values, GradCompression format);

}  // namespace duet::parallel
