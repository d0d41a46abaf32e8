// One plane of average pooling, through an activation: what pool2d.cpp's kernels run on every
// plane of a batch, and the fused convolution and pooling (conv2d_direct.cpp) on each image's
// planes as the convolution computes them.
#pragma once

#include "duet/kernels/nn_layouts.h"

namespace duet::kernels::cpu {

// 2x2 windows with stride 2 and no padding, whose loops need no clipping.
bool is_two_by_two(const PoolLayout& g);

// out [Ho, Wo] = the average pooling of F(in [H, W]), F an activation functor of
// kernels/functors.h (Relu, Sigmoid, Tanh) or Identity; g's sizes are those of one plane.
// scratch: average_plane_scratch(g) values, the caller's for its planes one after another: two
// thread_local buffers looked up per plane cost small planes a large share of their time
// (docs/performance.md).
template <class T, class F> void average_activated_plane(const T* in, const PoolLayout& g, T* out, T* scratch);
inline int64_t average_plane_scratch(const PoolLayout& g) { return 2 * g.in_plane(); }
// gx [H, W] = the gradient of that with respect to in, given the pooled gradient grad [Ho, Wo].
template <class T, class F>
void average_activated_plane_backward(const T* grad, const T* in, const PoolLayout& g, T* gx);

}  // namespace duet::kernels::cpu
