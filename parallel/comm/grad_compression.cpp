#include "duet/parallel/comm/grad_compression.h"

#include <bit>
#include <cstring>

#include "duet/autograd/factory.h"
#include "duet/core/error.h"
#include "duet/kernels/kernels.h"

namespace duet::parallel {
namespace {

// Adds half of the dropped bits' weight, less one unless the kept part is odd: the carry then
// rounds to nearest with ties to even. `dropped` low bits of `bits` are cut afterwards.
uint32_t round_half_even(uint32_t bits, int dropped) {
  const uint32_t half = 1u << (dropped - 1);
  return bits + (half - 1) + ((bits >> dropped) & 1u);
}

uint16_t fp16_code(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;           // NaN: the quiet NaN PyTorch makes
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;          // from 65520 (65504 + half a step) up: inf
  if (magnitude < 0x38800000u) {                                // below 2^-14: a subnormal, in steps of 2^-24
    if (magnitude <= 0x33000000u) return sign;                  // up to 2^-25 (a tie with 0, which is even)
    const int shift = 126 - static_cast<int>(magnitude >> 23);  // 14 to 23 bits of the significand go
    const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
    return sign | static_cast<uint16_t>(round_half_even(significand, shift) >> shift);
  }
  // Normal: rebias the exponent (127 -> 15) and keep 10 of the 23 fraction bits; a carry out of
  // the fraction moves up the exponent, as it should.
  return sign | static_cast<uint16_t>((round_half_even(magnitude, 13) - 0x38000000u) >> 13);
}

float fp16_value(uint16_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x8000u) << 16;
  const uint32_t exponent = (code >> 10) & 0x1fu;
  const uint32_t fraction = code & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: fraction * 2^-24, exact in f32
    const float magnitude = static_cast<float>(fraction) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (fraction << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (fraction << 13));
}

uint16_t bf16_code(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;  // NaN: PyTorch's quiet NaN
  return static_cast<uint16_t>(round_half_even(bits, 16) >> 16);
}

float bf16_value(uint16_t code) { return std::bit_cast<float>(static_cast<uint32_t>(code) << 16); }

void check_format(GradCompression format, const char* op) {
  DUET_CHECK(format != GradCompression::none, op, ": needs fp16 or bf16, not none");
}

}  // namespace

const char* name(GradCompression format) {
  switch (format) {
    case GradCompression::none:
      return "none";
    case GradCompression::fp16:
      return "fp16";
    case GradCompression::bf16:
      return "bf16";
  }
  return "unknown grad compression";
}

GradCompression parse_grad_compression(const std::string& text) {
  for (GradCompression format : {GradCompression::none, GradCompression::fp16, GradCompression::bf16})
    if (text == name(format)) return format;
  DUET_FAIL("unknown gradient compression '", text, "': expected none, fp16 or bf16");
}

int64_t wire_bytes(int64_t numel, DType dtype, GradCompression format) {
  return numel * (format == GradCompression::none ? static_cast<int64_t>(element_size(dtype)) : 2);
}

uint16_t encode_value(float value, GradCompression format) {
  check_format(format, "encode_value");
  return format == GradCompression::fp16 ? fp16_code(value) : bf16_code(value);
}

float decode_value(uint16_t code, GradCompression format) {
  check_format(format, "decode_value");
  return format == GradCompression::fp16 ? fp16_value(code) : bf16_value(code);
}

float round_to_wire(float value, GradCompression format) { return decode_value(encode_value(value, format), format); }

Tensor encode(const Tensor& values, GradCompression format) {
  check_format(format, "encode");
  DUET_CHECK(values.dtype() == DType::f32 && (values.numel() == 0 || values.is_contiguous()),
             "encode: needs a contiguous f32 tensor, got ", values.describe());
  const Tensor host = values.device().is_cpu() ? values : values.to(cpu(0));
  Tensor codes = empty({2 * values.numel()}, {.dtype = DType::u8, .device = host.device()});
  const auto* in = static_cast<const float*>(host.data_ptr());
  auto* out = static_cast<unsigned char*>(codes.data_ptr());
  for (int64_t i = 0; i < values.numel(); ++i) {
    const uint16_t code = encode_value(in[i], format);
    std::memcpy(out + 2 * i, &code, 2);
  }
  return values.device().is_cpu() ? codes : codes.to(values.device());
}

void decode(const Tensor& codes, const Tensor& values, GradCompression format) {
  check_format(format, "decode");
  DUET_CHECK(codes.dtype() == DType::u8 && codes.numel() == 2 * values.numel() && values.dtype() == DType::f32 &&
                 (values.numel() == 0 || (codes.is_contiguous() && values.is_contiguous())),
             "decode: needs contiguous u8 codes, two per f32 value, got ", codes.describe(), " for ",
             values.describe());
  if (values.numel() == 0) return;
  const Tensor host_codes = codes.device().is_cpu() ? codes : codes.to(cpu(0));
  const Tensor host = values.device().is_cpu() ? values : empty({values.numel()}, {.dtype = DType::f32});
  const auto* in = static_cast<const unsigned char*>(host_codes.data_ptr());
  auto* out = static_cast<float*>(host.data_ptr());
  for (int64_t i = 0; i < values.numel(); ++i) {
    uint16_t code = 0;
    std::memcpy(&code, in + 2 * i, 2);
    out[i] = decode_value(code, format);
  }
  if (!values.device().is_cpu()) kernels::copy(host, values.as_strided({values.numel()}, {1}, values.offset()));
}

}  // namespace duet::parallel
