// Direct convolution on the CPU: stride 1, dilation 1, one group, and no column matrix.
//
// An image is copied once into a zero-padded plane xp [C, Hp, Wp] (Hp = H + 2 ph, Wp = W + 2 pw).
// Number the outputs on that plane's grid, q = oh * Wp + ow. Then filter tap r = (c, ki, kj)
// reads xp[q + offset(r)] for output q, with offset(r) = (c * Hp + ki) * Wp + kj the same for
// every q: V consecutive outputs (one vector) read V consecutive inputs, whatever the tap. So
//   forward        out[k][q..q+V)     += w[k][r] * xp[q + offset(r) .. +V)    (one FMA per filter)
//   input grad     xp'[q + offset(r)] += sum over k of w[k][r] * g[k][q]      (added onto the plane)
//   weight grad    gw[k][r]           += sum over q of g[k][q] * xp[q + offset(r)]
// with g the output gradient laid out on the same grid. The grid's columns ow >= Wo are lanes
// computed and dropped: (kw - 1) / Wp of the work, more for small images. Layers with many
// filters run their vectors along the filters instead (forward and weight gradient): then only
// the real output pixels are visited, each input is broadcast, and the output (or the output
// gradient) is transposed between [k][p] and [p][k] once per image; the few filters past the
// last full vector stay on the grid. Their input gradient is a GEMM per block of real output
// pixels, cols [pixels, kh * kw * C] = g^T @ W (gemm.h's PackedPanels, W packed once per call),
// whose rows are added onto a channel-last padded plane, a kernel row's kw * C values at a time.
// The weight gradient sums the bias gradient from each image's output gradient while it is in
// cache, staged or transposed, so the step reads it once for both.
//
// Each kernel keeps a block of outputs (or, for the weight gradient, of weights) in registers and
// streams the operands through it. On LeNet's and LeNet-ReLU's layers this beats im2col + GEMM,
// which spends its time copying the column matrix around GEMMs too small for BLAS;
// docs/performance.md has the roofline per layer, both paths.
#pragma once

#include "duet/kernels/nn_layouts.h"

namespace duet::kernels::cpu {

// Whether the direct kernels can compute this convolution: stride 1, dilation 1, one group, and
// padding below the kernel size (so that the input gradient's padding is not negative).
bool direct_conv_fits(const ConvLayout& g);

// Where the direct kernels beat im2col + GEMM (bench/layer_roofline times both, see
// docs/performance.md; the reasons are at the definitions). Forward: with many filters and taps
// (vectors along the filters), or where at least half of the grid's lanes are outputs. Input
// gradient: with 32 filters or more (the GEMM), or where half of the grid's lanes are outputs
// (resnet18's 4x4 stage computes 16 outputs in 48 lanes: two thirds of the grid's work would be
// dropped columns). Weight gradient: while its partial sums fit in cache.
bool direct_forward_pays(const ConvLayout& g);
bool direct_input_grad_pays(const ConvLayout& g);
bool direct_weight_grad_pays(const ConvLayout& g);

// The three convolutions over the whole batch, in the pool's threads; operands as conv2d.cpp's.
template <class T> void direct_conv_forward(const ConvLayout& g, const T* x, const T* weight, const T* bias, T* out);
template <class T> void direct_conv_backward_input(const ConvLayout& g, const T* grad_out, const T* weight, T* grad_x);
// grad_bias (may be null): the sum of grad_out over N, H and W, taken as grad_out is staged.
template <class T>
void direct_conv_backward_weight(const ConvLayout& g, const T* grad_out, const T* x, T* grad_weight, T* grad_bias);

// out = average pooling p of F(the convolution), F an activation functor of kernels/functors.h
// or Identity, image by image, the convolution's output kept in the thread's cache; p's sizes
// are one plane's. Any convolution that direct_conv_fits. The backward computes the convolution
// again, and fills each of grad_x, grad_weight and grad_bias that is not null.
template <class T, class F> void direct_conv_pool_forward(const ConvLayout& g, const PoolLayout& p, const T* x,
                                                          const T* weight, const T* bias, T* out);
template <class T, class F> void direct_conv_pool_backward(const ConvLayout& g, const PoolLayout& p, const T* grad_out,
                                                           const T* x, const T* weight, const T* bias, T* grad_x,
                                                           T* grad_weight, T* grad_bias);

}  // namespace duet::kernels::cpu
