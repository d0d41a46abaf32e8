// The direct convolution kernels: see conv2d_direct.h for the grid they compute on.
#include "duet/kernels/cpu/conv2d_direct.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "duet/kernels/cpu/gemm.h"
#include "duet/kernels/cpu/im2col.h"  // copy_row: rows of a few dozen floats, without a call to memmove
#include "duet/kernels/cpu/pool_plane.h"
#include "duet/kernels/cpu/simd.h"
#include "duet/kernels/cpu/thread_pool.h"
#include "duet/kernels/cpu/transpose.h"
#include "duet/kernels/functors.h"

namespace duet::kernels::cpu {
namespace {

// Vectors of outputs per register block of the forward kernel (correlate_plane).
constexpr int kOutputVectors = 3;

// The padded plane a convolution reads, and the grid of its outputs (see conv2d_direct.h).
struct Grid {
  int64_t channels, height, width;  // the padded plane
  int64_t kernel_h, kernel_w;
  int64_t pad_h, pad_w;  // the zeros around the source image on each side
  int64_t out_h() const { return height - kernel_h + 1; }
  int64_t out_w() const { return width - kernel_w + 1; }
  int64_t taps() const { return channels * kernel_h * kernel_w; }
  // Grid positions that the kernels compute: up to the last output, rounded up to a block.
  template <class T> int64_t span() const {
    const int64_t used = (out_h() - 1) * width + out_w(), block = kOutputVectors * Simd<T>::kLanes;
    return (used + block - 1) / block * block;
  }
  // The plane's size with room for the furthest read: span + the last tap's offset.
  template <class T> int64_t plane_size() const {
    return std::max(channels * height * width, span<T>() + tap_offset(taps() - 1));
  }
  int64_t tap_offset(int64_t r) const {
    const int64_t kj = r % kernel_w, ki = r / kernel_w % kernel_h, c = r / (kernel_w * kernel_h);
    return (c * height + ki) * width + kj;
  }
  std::vector<int64_t> tap_offsets() const {
    std::vector<int64_t> offsets(static_cast<size_t>(taps()));
    for (int64_t r = 0; r < taps(); ++r) offsets[static_cast<size_t>(r)] = tap_offset(r);
    return offsets;
  }
};

// The forward pass reads the input, padded as the layer says.
Grid input_grid(const ConvLayout& g) {
  return {g.channels, g.height + 2 * g.padding.h, g.width + 2 * g.padding.w, g.kernel_h, g.kernel_w, g.padding.h,
          g.padding.w};
}

// plane = the source image [channels, h, w] with grid.pad_h/pad_w zeros around it, and zeros
// beyond (the lanes past the last output read them).
template <class T> void pad_into(const Grid& grid, const T* image, T* plane) {
  std::fill(plane, plane + grid.plane_size<T>(), T(0));
  const int64_t h = grid.height - 2 * grid.pad_h, w = grid.width - 2 * grid.pad_w;
  for (int64_t c = 0; c < grid.channels; ++c) {
    for (int64_t y = 0; y < h; ++y) {
      copy_row(plane + (c * grid.height + grid.pad_h + y) * grid.width + grid.pad_w, image + (c * h + y) * w, w);
    }
  }
}

// stage[k][q] for q in [0, span): blocks of up to 8 filters x kOutputVectors vectors of outputs in
// registers (24 accumulators), the taps streamed through them: per tap, kOutputVectors loads and
// 8 broadcasts feed 24 FMAs. taps_major[r * filters + k] is filter k's weight for tap r; bias may
// be null.
template <class T> void correlate_plane(const Grid& grid, const int64_t* offsets, const T* plane, const T* taps_major,
                                        int64_t filters, const T* bias, T* stage) {
  using S = Simd<T>;
  using Vec = typename S::Vec;
  constexpr int64_t V = S::kLanes, QB = kOutputVectors;
  const int64_t span = grid.span<T>(), taps = grid.taps();
  for (int64_t k0 = 0; k0 < filters; k0 += 8) {
    with_block<8>(filters - k0, [&]<int KB>() {
      for (int64_t q = 0; q < span; q += QB * V) {
        Vec acc[KB][QB];
#pragma GCC unroll 8
        for (int j = 0; j < KB; ++j) {
#pragma GCC unroll 8
          for (int v = 0; v < QB; ++v) acc[j][v] = S::splat(bias ? bias[k0 + j] : T(0));
        }
        for (int64_t r = 0; r < taps; ++r) {
          const T* in = plane + q + offsets[r];
          Vec x[QB];
#pragma GCC unroll 8
          for (int v = 0; v < QB; ++v) x[v] = S::load(in + v * V);
          const T* w = taps_major + r * filters + k0;
#pragma GCC unroll 8
          for (int j = 0; j < KB; ++j) {
#pragma GCC unroll 8
            for (int v = 0; v < QB; ++v) acc[j][v] += w[j] * x[v];
          }
        }
#pragma GCC unroll 8
        for (int j = 0; j < KB; ++j) {
#pragma GCC unroll 8
          for (int v = 0; v < QB; ++v) S::store(stage + (k0 + j) * span + q + v * V, acc[j][v]);
        }
      }
    });
  }
}

// out [oh, ow] = filter k's plane of stage, without the grid's columns past out_w.
template <class T> void unstage_filter(const Grid& grid, const T* stage, int64_t k, T* out) {
  const int64_t span = grid.span<T>(), oh = grid.out_h(), ow = grid.out_w();
  for (int64_t y = 0; y < oh; ++y) copy_row(out + y * ow, stage + k * span + y * grid.width, ow);
}

// out [filters, out_h, out_w] = the grid's outputs in stage.
template <class T> void unstage(const Grid& grid, const T* stage, int64_t filters, T* out) {
  for (int64_t k = 0; k < filters; ++k) unstage_filter(grid, stage, k, out + k * grid.out_h() * grid.out_w());
}

// A convolution of every image of a batch through correlate_plane, images split over the pool.
// taps_major as correlate_plane's; `source` holds the batch's planes before padding.
template <class T> void correlate_batch(const Grid& grid, int64_t batch, const T* source, const T* taps_major,
                                        int64_t filters, const T* bias, T* out) {
  const std::vector<int64_t> offsets = grid.tap_offsets();
  const int64_t source_size = grid.channels * (grid.height - 2 * grid.pad_h) * (grid.width - 2 * grid.pad_w);
  const int64_t out_size = filters * grid.out_h() * grid.out_w();
  parallel_for(batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> plane(static_cast<size_t>(grid.plane_size<T>()));
    std::vector<T> stage(static_cast<size_t>(filters * grid.span<T>()));
    for (int64_t n = begin; n < end; ++n) {
      pad_into(grid, source + n * source_size, plane.data());
      correlate_plane(grid, offsets.data(), plane.data(), taps_major, filters, bias, stage.data());
      unstage(grid, stage.data(), filters, out + n * out_size);
    }
  });
}

// The forward pass with the vectors along the filters, for layers with many: stage[p][k] for each
// real output pixel p (no dropped columns), a block of 6 pixels x up to 4 filter vectors in
// registers, starting from the bias (bias_lanes, padded as by_tap's rows, or null); per tap, the
// block's filter vectors of weights (by_tap[r][k], filters padded with zeros to whole vectors)
// times each pixel's broadcast input.
template <class T> void correlate_by_filter(const Grid& grid, const int64_t* offsets, const T* plane, const T* by_tap,
                                            const T* bias_lanes, int64_t filter_vectors, T* stage) {
  using S = Simd<T>;
  using Vec = typename S::Vec;
  constexpr int64_t V = S::kLanes;
  const int64_t taps = grid.taps(), ow = grid.out_w(), pixels = grid.out_h() * ow, row = filter_vectors * V;
  for (int64_t p0 = 0; p0 < pixels; p0 += 6) {
    with_block<6>(pixels - p0, [&]<int PB>() {
      const T* in[PB];  // each pixel's window origin on the plane
#pragma GCC unroll 8
      for (int i = 0; i < PB; ++i) in[i] = plane + (p0 + i) / ow * grid.width + (p0 + i) % ow;
      for (int64_t kv0 = 0; kv0 < filter_vectors; kv0 += 4) {
        with_block<4>(filter_vectors - kv0, [&]<int KB>() {
          Vec acc[PB][KB] = {};
          if (bias_lanes) {
#pragma GCC unroll 8
            for (int i = 0; i < PB; ++i) {
#pragma GCC unroll 8
              for (int j = 0; j < KB; ++j) acc[i][j] = S::load(bias_lanes + (kv0 + j) * V);
            }
          }
          for (int64_t r = 0; r < taps; ++r) {
            Vec w[KB];
#pragma GCC unroll 8
            for (int j = 0; j < KB; ++j) w[j] = S::load(by_tap + r * row + (kv0 + j) * V);
#pragma GCC unroll 8
            for (int i = 0; i < PB; ++i) {
              const T xi = in[i][offsets[r]];
#pragma GCC unroll 8
              for (int j = 0; j < KB; ++j) acc[i][j] += xi * w[j];
            }
          }
#pragma GCC unroll 8
          for (int i = 0; i < PB; ++i) {
#pragma GCC unroll 8
            for (int j = 0; j < KB; ++j) S::store(stage + (p0 + i) * row + (kv0 + j) * V, acc[i][j]);
          }
        });
      }
    });
  }
}

// sums[k] += the sum of rows[k * length, (k + 1) * length) for each of `count` rows: the bias
// gradient, from rows of the output gradient already in cache. Each row is added in vectors of
// float (a few hundred elements), the rows' sums in double.
template <class T> void add_row_sums(const T* rows, int64_t count, int64_t length, double* sums) {
  using S = Simd<T>;
  constexpr int64_t V = S::kLanes;
  for (int64_t k = 0; k < count; ++k) {
    const T* row = rows + k * length;
    typename S::Vec acc[4] = {};
    int64_t i = 0;
    for (; i + 4 * V <= length; i += 4 * V) {
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) acc[c] += S::load(row + i + c * V);
    }
    for (; i + V <= length; i += V) acc[0] += S::load(row + i);
    T tail = 0;
    for (; i < length; ++i) tail += row[i];
    sums[k] += static_cast<double>(S::sum((acc[0] + acc[1]) + (acc[2] + acc[3])) + tail);
  }
}

// g [filters, span]: one image's output gradient [filters, out_h, out_w] laid out on the grid;
// the dropped columns keep the zeros they were allocated with.
template <class T> void stage_on_grid(const Grid& grid, const T* grad_out, int64_t filters, T* g) {
  const int64_t span = grid.span<T>(), oh = grid.out_h(), ow = grid.out_w();
  for (int64_t k = 0; k < filters; ++k) {
    for (int64_t y = 0; y < oh; ++y) copy_row(g + k * span + y * grid.width, grad_out + (k * oh + y) * ow, ow);
  }
}

// plane[q + offset(r)] += sum over k of weight[k][r] * g[k][q], for every tap r and grid output q:
// (window_major[(t * filters + k) * channels + c] is weight[k][c][t], t = ki * kw + kj)
// the input gradient, on the padded plane (whose border, the padding's gradient, is dropped).
// A GEMM over the filters whose results are added straight onto the pixels they belong to: a
// block of up to 8 taps x kOutputVectors vectors in registers, the filters streamed through.
// The taps of a block share (ki, kj) and differ in channel, so their vectors lie a channel
// plane apart and no add reads a vector that the one before it wrote part of. The dropped
// columns of g are zero, so their lanes add zeros.
template <class T>
void scatter_input_grad(const Grid& grid, const T* g, int64_t filters, const T* window_major, T* plane) {
  using S = Simd<T>;
  using Vec = typename S::Vec;
  constexpr int64_t V = S::kLanes, QB = kOutputVectors;
  const int64_t span = grid.span<T>(), window = grid.kernel_h * grid.kernel_w, channels = grid.channels;
  const int64_t channel_plane = grid.height * grid.width;
  for (int64_t q = 0; q < span; q += QB * V) {
    for (int64_t t = 0; t < window; ++t) {
      const int64_t offset = (t / grid.kernel_w) * grid.width + t % grid.kernel_w;
      for (int64_t c0 = 0; c0 < grid.channels; c0 += 8) {
        with_block<8>(grid.channels - c0, [&]<int CB>() {
          Vec acc[CB][QB] = {};
          for (int64_t k = 0; k < filters; ++k) {
            Vec gk[QB];
#pragma GCC unroll 8
            for (int v = 0; v < QB; ++v) gk[v] = S::load(g + k * span + q + v * V);
            const T* w = window_major + (t * filters + k) * channels + c0;
#pragma GCC unroll 8
            for (int i = 0; i < CB; ++i) {
#pragma GCC unroll 8
              for (int v = 0; v < QB; ++v) acc[i][v] += w[i] * gk[v];
            }
          }
#pragma GCC unroll 8
          for (int i = 0; i < CB; ++i) {
            T* out = plane + (c0 + i) * channel_plane + offset + q;
#pragma GCC unroll 8
            for (int v = 0; v < QB; ++v) S::store(out + v * V, S::load(out + v * V) + acc[i][v]);
          }
        });
      }
    }
  }
}

// image [channels, h, w] = the plane without its padding: pad_into's adjoint for the pixels kept.
template <class T> void unpad_from(const Grid& grid, const T* plane, T* image) {
  const int64_t h = grid.height - 2 * grid.pad_h, w = grid.width - 2 * grid.pad_w;
  for (int64_t c = 0; c < grid.channels; ++c) {
    for (int64_t y = 0; y < h; ++y) {
      copy_row(image + (c * h + y) * w, plane + (c * grid.height + grid.pad_h + y) * grid.width + grid.pad_w, w);
    }
  }
}

// Vector partial sums acc[k][r] += g_n[k][q] * plane_n[q + offset(r)] over the grid and over
// `images` images n, per lane: a block of 8 filters x 3 taps (1 or 2 filters x 6 taps) stays in
// registers through all the images' outputs, one vector at a time, so that acc (filters x taps
// vectors, more than L2 holds for large layers) is read and written once per group of images.
// plane_n = planes + n * plane_size; g_n = grads + n * filters * span holds image n's output
// gradient on the grid (zeros in the dropped columns).
template <class T> void accumulate_weight_grad(const Grid& grid, const int64_t* offsets, int64_t images,
                                               const T* planes, const T* grads, int64_t filters,
                                               typename Simd<T>::Vec* acc) {
  using S = Simd<T>;
  using Vec = typename S::Vec;
  constexpr int64_t V = S::kLanes;
  const int64_t span = grid.span<T>(), taps = grid.taps(), plane_size = grid.plane_size<T>();
  for (int64_t k0 = 0; k0 < filters; k0 += 8) {
    with_block<8>(filters - k0, [&]<int KB>() {
      // 1 or 2 filters take 6 taps a block: 2 filters x 3 taps load 5 vectors for 6 multiply-adds.
      // 8 taps gain nothing more, and 10 or 12 spill the accumulators out of the registers.
      constexpr int kTapBlock = KB <= 2 ? 6 : 3;
      for (int64_t r0 = 0; r0 < taps; r0 += kTapBlock) {
        with_block<kTapBlock>(taps - r0, [&]<int RB>() {
          Vec sum[KB][RB];
#pragma GCC unroll 8
          for (int j = 0; j < KB; ++j) {
#pragma GCC unroll 8
            for (int i = 0; i < RB; ++i) sum[j][i] = acc[(k0 + j) * taps + r0 + i];
          }
          for (int64_t n = 0; n < images; ++n) {
            const T* plane = planes + n * plane_size;
            const T* g = grads + (n * filters + k0) * span;
            for (int64_t q = 0; q < span; q += V) {
              Vec x[RB];
#pragma GCC unroll 8
              for (int i = 0; i < RB; ++i) x[i] = S::load(plane + q + offsets[r0 + i]);
#pragma GCC unroll 8
              for (int j = 0; j < KB; ++j) {
                const Vec gj = S::load(g + j * span + q);
#pragma GCC unroll 8
                for (int i = 0; i < RB; ++i) sum[j][i] += gj * x[i];
              }
            }
          }
#pragma GCC unroll 8
          for (int j = 0; j < KB; ++j) {
#pragma GCC unroll 8
            for (int i = 0; i < RB; ++i) acc[(k0 + j) * taps + r0 + i] = sum[j][i];
          }
        });
      }
    });
  }
}

// Images whose output gradients the weight gradient stages at once (accumulate_weight_grad): as
// many as fit in 32 KiB, the L1 of this project's machines, up to 8. More images per group read
// and write the partial sums less often, which pays where a grid is small (lenet-relu's 2 filters
// left to the grid: 9 multiply-adds per partial sum and image); but staged past L1 they are read
// back from L2 (lenet-relu's 1->20 stages 61 KiB an image).
template <class T> int64_t image_group(const Grid& grid, int64_t filters) {
  const int64_t staged_bytes = filters * grid.span<T>() * static_cast<int64_t>(sizeof(T));
  return std::clamp<int64_t>((32 << 10) / staged_bytes, 1, 8);
}

// Filters [first, first + count) of a layer: the weight gradient's kernels may split them.
struct FilterRange {
  int64_t first, count;
};

// The input gradient's GEMM (input_grad_by_gemm): output pixels per block, whose cols rows
// (kh * kw * C floats each, 500 on lenet-relu) stay in L2 until they are added onto the plane;
// and the fewest filters (its inner dimension) where it is taken.
constexpr int64_t kPixelBlock = 96, kInputGradGemmFilters = 32;

// The filters that the kernels along the filters leave to the grid's: those past the last full
// vector, when they fill less than half of one. lenet-relu's 50 filters are 3 full vectors and 2
// filters, whose fourth vector would be 7/8 zeros; on the grid they cost about a fifth of it.
template <class T> int64_t filters_left_to_grid(int64_t filters) {
  constexpr int64_t V = Simd<T>::kLanes;
  return filters % V < V / 2 ? filters % V : 0;
}

// The forward pass runs its vectors along the filters where the taps pay for transposing the
// output (at least 64), and either two vectors of filters are full or nearly (at least 32) or the
// lanes of one (16 to 31 filters) are fuller than the grid's by 15% or more: lenet's 6->16 puts
// 16 filters in 16 lanes, where the grid has 100 outputs in 144. A smaller margin does not pay
// for the transpose reliably (docs/performance.md has 10 such layers timed both ways).
bool forward_by_filter_pays(const ConvLayout& g) {
  constexpr int64_t kFloatLanes = 16;
  const int64_t weight_bytes = g.patch_size() * (g.filters + kFloatLanes - 1) / kFloatLanes * kFloatLanes * 4;
  // Each block of 6 pixels streams all the weights: within 4 MiB, so that they stay in cache from
  // one block to the next (resnet18's 512->512 has 9 MiB; docs/performance.md).
  if (!direct_conv_fits(g) || g.patch_size() < 64 || weight_bytes > (4 << 20)) return false;
  if (g.filters >= 2 * kFloatLanes) return true;
  const int64_t lane_filters = g.filters - filters_left_to_grid<float>(g.filters);
  const int64_t lanes = (lane_filters + kFloatLanes - 1) / kFloatLanes * kFloatLanes;
  // lane_filters / lanes >= 1.15 * out_pixels / grid lanes
  return g.filters >= kFloatLanes && 100 * lane_filters * input_grid(g).span<float>() >= 115 * lanes * g.out_pixels();
}

// The kernels on the grid pay while at least half of its lanes are outputs (not dropped columns).
bool grid_pays(const ConvLayout& g) {
  const Grid grid = input_grid(g);
  return direct_conv_fits(g) && 2 * g.out_pixels() >= grid.span<float>();
}

// Which way the weight gradient's vectors run (weight_grad_lanes).
enum class WeightGradLanes { none, pixels, filters };

// Along the filters where there are taps enough to pay for transposing the output gradient (at
// least 64 multiply-adds per element moved) and filters enough to fill half a vector, as long
// as the partial sums (taps x filter vectors) stay within 4 MiB of cache; else along the pixels
// while theirs (filters x taps vectors) stay within 256 KiB of L2; else not at all. So lenet's
// 1->6 (25 taps) runs along the pixels, its 6->16 (150 taps) along the filters, and resnet18's
// 512->512 (9 MiB of partial sums) on im2col (docs/performance.md has them timed both ways).
WeightGradLanes weight_grad_lanes(const ConvLayout& g) {
  constexpr int64_t kFloatLanes = 16, kVectorBytes = 64;
  const int64_t taps = g.patch_size(), filter_vectors = (g.filters + kFloatLanes - 1) / kFloatLanes;
  if (!direct_conv_fits(g)) return WeightGradLanes::none;
  if (taps >= 64 && 2 * g.filters >= kFloatLanes && taps * filter_vectors * kVectorBytes <= (4 << 20)) {
    return WeightGradLanes::filters;
  }
  if (g.filters * taps * kVectorBytes <= (256 << 10)) return WeightGradLanes::pixels;
  return WeightGradLanes::none;
}

// The weight gradient with the vectors along the filters, for layers with many of them: per
// output pixel p, gT[p][k] (one image's output gradient transposed, filters padded to whole
// vectors with zeros) times the broadcast input plane[q(p) + offset(r)] adds onto acc[r][k], a
// block of up to 4 filter vectors x 6 or 8 taps in registers. Only the real output pixels are
// visited, and acc is filled by lane, with no horizontal sums: acc[r * filter_vectors + kv] lane l
// is the gradient of weight [kv * V + l][r].
template <class T> void accumulate_weight_grad_by_filter(const Grid& grid, const int64_t* offsets, const T* plane,
                                                         const T* gT, int64_t filter_vectors,
                                                         typename Simd<T>::Vec* acc) {
  using S = Simd<T>;
  using Vec = typename S::Vec;
  constexpr int64_t V = S::kLanes;
  const int64_t taps = grid.taps(), oh = grid.out_h(), ow = grid.out_w(), row = filter_vectors * V;
  for (int64_t kv0 = 0; kv0 < filter_vectors; kv0 += 4) {
    with_block<4>(filter_vectors - kv0, [&]<int KB>() {
      // 24 accumulators for 4 or 3 filter vectors (6 or 8 taps), which leaves AVX-512's 32 vector
      // registers room for the filter vectors and the broadcast input; 6 taps for fewer vectors,
      // where 8 ran slower on lenet's 6->16 (docs/performance.md).
      constexpr int kTapBlock = KB == 3 ? 8 : 6;
      for (int64_t r0 = 0; r0 < taps; r0 += kTapBlock) {
        with_block<kTapBlock>(taps - r0, [&]<int RB>() {
          Vec sum[RB][KB];
#pragma GCC unroll 8
          for (int i = 0; i < RB; ++i) {
#pragma GCC unroll 8
            for (int j = 0; j < KB; ++j) sum[i][j] = acc[(r0 + i) * filter_vectors + kv0 + j];
          }
          const T* gp = gT + kv0 * V;
          for (int64_t y = 0; y < oh; ++y) {
            const T* in = plane + y * grid.width;
            for (int64_t xo = 0; xo < ow; ++xo, gp += row) {
              Vec gk[KB];
#pragma GCC unroll 8
              for (int j = 0; j < KB; ++j) gk[j] = S::load(gp + j * V);
#pragma GCC unroll 8
              for (int i = 0; i < RB; ++i) {
                const T xi = in[xo + offsets[r0 + i]];
#pragma GCC unroll 8
                for (int j = 0; j < KB; ++j) sum[i][j] += xi * gk[j];
              }
            }
          }
#pragma GCC unroll 8
          for (int i = 0; i < RB; ++i) {
#pragma GCC unroll 8
            for (int j = 0; j < KB; ++j) acc[(r0 + i) * filter_vectors + kv0 + j] = sum[i][j];
          }
        });
      }
    });
  }
}

// The input gradient as one GEMM per block of output pixels, its vectors along the weights'
// columns rather than the grid, for layers with filters enough to make the GEMM's inner dimension:
//   cols [pixels, kh * kw * C] = g^T @ W',   W'[k][(ki * kw + kj) * C + c] = weight[k][c][ki][kj]
// (W' packed once per call), then each pixel's cols row is added onto a channel-last padded plane
// [Hp][Wp][C], where one kernel row's kw * C values land on kw * C consecutive floats. Only real
// output pixels are computed, where the grid kernel (scatter_input_grad) also computes the
// columns past out_w: 44% of its lanes on lenet-relu's 20->50. The plane goes back to [C][H][W]
// once per image.
// Taken with 32 filters or more (fewer are too short an inner dimension for the GEMM), unless 7/8
// of the grid's lanes or more are outputs, where the grid wastes too few to lose: lenet's 6->16
// (16 filters) and resnet18's 64->64 on 28x28 (91% of the lanes are outputs) stay on the grid
// (docs/performance.md has the layers timed both ways).
bool input_grad_by_gemm_pays(const ConvLayout& g) {
  const int64_t lanes = input_grid(g).span<float>();
  return direct_conv_fits(g) && g.filters >= kInputGradGemmFilters && 8 * g.out_pixels() < 7 * lanes;
}

template <class T> void input_grad_by_gemm(const ConvLayout& g, const T* grad_out, const T* weight, T* grad_x) {
  const int64_t filters = g.filters, channels = g.channels, kh = g.kernel_h, kw = g.kernel_w;
  const int64_t kernel_row = kw * channels, taps = kh * kernel_row, pixels = g.out_pixels(), ow = g.out_w;
  const int64_t hp = g.height + 2 * g.padding.h, wp = g.width + 2 * g.padding.w;
  std::vector<T> reordered(static_cast<size_t>(filters * taps));
  for (int64_t k = 0; k < filters; ++k) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t t = 0; t < kh * kw; ++t) {
        reordered[static_cast<size_t>(k * taps + t * channels + c)] = weight[(k * channels + c) * kh * kw + t];
      }
    }
  }
  PackedPanels<T> panels(taps, filters);
  parallel_for(panels.panels(), 1,
               [&](int64_t first, int64_t last) { panels.pack(false, reordered.data(), taps, first, last); });
  parallel_for(g.batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> cols(static_cast<size_t>(kPixelBlock * taps)), plane(static_cast<size_t>(hp * wp * channels));
    for (int64_t n = begin; n < end; ++n) {
      std::fill(plane.begin(), plane.end(), T(0));
      const T* gn = grad_out + n * filters * pixels;
      for (int64_t p0 = 0; p0 < pixels; p0 += kPixelBlock) {
        const int64_t rows = std::min(kPixelBlock, pixels - p0);
        panels.multiply(true, rows, gn + p0, pixels, cols.data(), taps);  // g^T: g [filters, pixels]
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t y = (p0 + i) / ow, x = (p0 + i) % ow;
          for (int64_t ki = 0; ki < kh; ++ki) {
            T* dst = plane.data() + ((y + ki) * wp + x) * channels;
            const T* src = cols.data() + i * taps + ki * kernel_row;
            for (int64_t j = 0; j < kernel_row; ++j) dst[j] += src[j];
          }
        }
      }
      // [C][H][W]: the plane without its border, transposed. The stores run along gx's rows and
      // the loads stride through the plane, which is in L1: the other way round, every store
      // would go to another row of gx, a different cache line each time.
      T* gx = grad_x + n * g.image_size();
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t y = 0; y < g.height; ++y) {
          const T* src = plane.data() + ((y + g.padding.h) * wp + g.padding.w) * channels + c;
          T* dst = gx + (c * g.height + y) * g.width;
          for (int64_t x = 0; x < g.width; ++x) dst[x] = src[x * channels];
        }
      }
    }
  });
}

}  // namespace

bool direct_conv_fits(const ConvLayout& g) {
  return g.groups == 1 && g.stride.h == 1 && g.stride.w == 1 && g.dilation.h == 1 && g.dilation.w == 1 &&
         g.padding.h < g.kernel_h && g.padding.w < g.kernel_w;
}

bool direct_forward_pays(const ConvLayout& g) { return forward_by_filter_pays(g) || grid_pays(g); }
bool direct_input_grad_pays(const ConvLayout& g) { return input_grad_by_gemm_pays(g) || grid_pays(g); }

bool direct_weight_grad_pays(const ConvLayout& g) { return weight_grad_lanes(g) != WeightGradLanes::none; }

// The forward pass along the filters (correlate_by_filter), images split over the pool; the
// filters left to the grid through correlate_plane.
template <class T>
void forward_by_filter(const ConvLayout& g, const Grid& grid, const T* x, const T* weight, const T* bias, T* out) {
  using S = Simd<T>;
  constexpr int64_t V = S::kLanes;
  const std::vector<int64_t> offsets = grid.tap_offsets();
  const int64_t taps = grid.taps(), filters = g.filters, pixels = g.out_pixels();
  const int64_t tail = filters_left_to_grid<T>(filters), lane_filters = filters - tail;
  const int64_t filter_vectors = (lane_filters + V - 1) / V, row = filter_vectors * V;
  std::vector<typename S::Vec> by_tap_vectors(static_cast<size_t>(taps * filter_vectors));  // padding lanes 0
  T* by_tap = reinterpret_cast<T*>(by_tap_vectors.data());
  std::vector<T> bias_lanes(bias ? static_cast<size_t>(row) : 0);
  if (bias) std::copy_n(bias, lane_filters, bias_lanes.begin());
  std::vector<T> tail_major(static_cast<size_t>(taps * tail));  // as correlate_plane reads them
  for (int64_t r = 0; r < taps; ++r) {
    for (int64_t k = 0; k < lane_filters; ++k) by_tap[r * row + k] = weight[k * taps + r];
    for (int64_t j = 0; j < tail; ++j)
      tail_major[static_cast<size_t>(r * tail + j)] = weight[(lane_filters + j) * taps + r];
  }
  parallel_for(g.batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> plane(static_cast<size_t>(grid.plane_size<T>()));
    std::vector<typename S::Vec> stage_vectors(static_cast<size_t>(pixels * filter_vectors));
    const T* stage = reinterpret_cast<const T*>(stage_vectors.data());
    std::vector<T> tail_stage(static_cast<size_t>(tail * grid.span<T>()));
    for (int64_t n = begin; n < end; ++n) {
      pad_into(grid, x + n * g.image_size(), plane.data());
      correlate_by_filter(grid, offsets.data(), plane.data(), by_tap, bias ? bias_lanes.data() : nullptr,
                          filter_vectors, reinterpret_cast<T*>(stage_vectors.data()));
      T* on = out + n * filters * pixels;
      transpose(stage, row, pixels, lane_filters, on, pixels);
      if (tail == 0) continue;
      correlate_plane(grid, offsets.data(), plane.data(), tail_major.data(), tail, bias ? bias + lane_filters : nullptr,
                      tail_stage.data());
      unstage(grid, tail_stage.data(), tail, on + lane_filters * pixels);
    }
  });
}

// weight [K, taps] transposed, as correlate_plane reads it.
template <class T> std::vector<T> taps_major_of(const T* weight, int64_t filters, int64_t taps) {
  std::vector<T> taps_major(static_cast<size_t>(taps * filters));
  for (int64_t k = 0; k < filters; ++k) {
    for (int64_t r = 0; r < taps; ++r) taps_major[static_cast<size_t>(r * filters + k)] = weight[k * taps + r];
  }
  return taps_major;
}

// A block of channels' weights for one (k, ki, kj) in a row, as scatter_input_grad reads them.
template <class T> std::vector<T> window_major_of(const ConvLayout& g, const T* weight) {
  const int64_t filters = g.filters, channels = g.channels, window = g.kernel_h * g.kernel_w;
  std::vector<T> window_major(static_cast<size_t>(window * filters * channels));
  for (int64_t k = 0; k < filters; ++k) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t t = 0; t < window; ++t) {
        window_major[static_cast<size_t>((t * filters + k) * channels + c)] = weight[(k * channels + c) * window + t];
      }
    }
  }
  return window_major;
}

template <class T> void direct_conv_forward(const ConvLayout& g, const T* x, const T* weight, const T* bias, T* out) {
  const Grid grid = input_grid(g);
  if (forward_by_filter_pays(g)) return forward_by_filter(g, grid, x, weight, bias, out);
  const std::vector<T> taps_major = taps_major_of(weight, g.filters, grid.taps());
  correlate_batch(grid, g.batch, x, taps_major.data(), g.filters, bias, out);
}

template <class T> void direct_conv_backward_input(const ConvLayout& g, const T* grad_out, const T* weight, T* grad_x) {
  if (input_grad_by_gemm_pays(g)) return input_grad_by_gemm(g, grad_out, weight, grad_x);
  const Grid grid = input_grid(g);
  const int64_t filters = g.filters, out_size = filters * g.out_h * g.out_w;
  const std::vector<T> window_major = window_major_of(g, weight);
  parallel_for(g.batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> plane(static_cast<size_t>(grid.plane_size<T>()));
    std::vector<typename Simd<T>::Vec> staged(static_cast<size_t>(filters * grid.span<T>() / Simd<T>::kLanes));
    T* gs = reinterpret_cast<T*>(staged.data());  // vector-aligned rows, as in the weight gradient
    for (int64_t n = begin; n < end; ++n) {
      std::fill(plane.begin(), plane.end(), T(0));
      stage_on_grid(grid, grad_out + n * out_size, filters, gs);
      scatter_input_grad(grid, gs, filters, window_major.data(), plane.data());
      unpad_from(grid, plane.data(), grad_x + n * g.image_size());
    }
  });
}

// Images [first, last) of the weight gradient of the filters in `range`, summed into part
// [range.count, taps]: the vectors run along the grid's outputs (accumulate_weight_grad), for
// layers with few filters and for the filters that the kernel along the filters leaves.
template <class T> void weight_grad_by_pixel(const ConvLayout& g, const Grid& grid, const int64_t* offsets,
                                             const T* grad_out, const T* x, int64_t first, int64_t last,
                                             FilterRange range, T* part, double* bias_part) {
  using Vec = typename Simd<T>::Vec;
  const int64_t filters = range.count, span = grid.span<T>(), weights = filters * grid.taps();
  const int64_t group = image_group<T>(grid, filters);
  std::vector<T> planes(static_cast<size_t>(group * grid.plane_size<T>()));
  // grad_out on the grid, zeros in the dropped columns; rows on vector boundaries (span is a
  // multiple of the lanes), so that the kernel's loads of it never straddle two cache lines.
  std::vector<Vec> grad_vectors(static_cast<size_t>(group * filters * span / Simd<T>::kLanes));
  T* grads = reinterpret_cast<T*>(grad_vectors.data());
  std::vector<Vec> acc(static_cast<size_t>(weights));
  for (int64_t n = first; n < last; n += group) {
    const int64_t images = std::min(group, last - n);
    for (int64_t i = 0; i < images; ++i) {
      pad_into(grid, x + (n + i) * g.image_size(), planes.data() + i * grid.plane_size<T>());
      const T* gn = grad_out + ((n + i) * g.filters + range.first) * g.out_pixels();
      stage_on_grid(grid, gn, filters, grads + i * filters * span);
      if (bias_part) add_row_sums(grads + i * filters * span, filters, span, bias_part);
    }
    accumulate_weight_grad(grid, offsets, images, planes.data(), grads, filters, acc.data());
  }
  for (int64_t i = 0; i < weights; ++i) part[i] = Simd<T>::sum(acc[static_cast<size_t>(i)]);
}

// The same with the vectors along the filters (accumulate_weight_grad_by_filter), for many
// filters: filters [0, range.count) into part [range.count, taps].
template <class T> void weight_grad_by_filter(const ConvLayout& g, const Grid& grid, const int64_t* offsets,
                                              const T* grad_out, const T* x, int64_t first, int64_t last,
                                              FilterRange range, T* part, double* bias_part) {
  using S = Simd<T>;
  constexpr int64_t V = S::kLanes;
  const int64_t filters = range.count, taps = grid.taps(), pixels = g.out_pixels();
  const int64_t filter_vectors = (filters + V - 1) / V, row = filter_vectors * V;
  std::vector<T> plane(static_cast<size_t>(grid.plane_size<T>()));
  std::vector<typename S::Vec> transposed(static_cast<size_t>(pixels * filter_vectors));  // padding lanes stay 0
  T* gT = reinterpret_cast<T*>(transposed.data());
  std::vector<typename S::Vec> acc(static_cast<size_t>(taps * filter_vectors));
  for (int64_t n = first; n < last; ++n) {
    pad_into(grid, x + n * g.image_size(), plane.data());
    const T* gn = grad_out + n * g.filters * pixels;
    transpose(gn, pixels, filters, pixels, gT, row);
    if (bias_part) add_row_sums(gn, filters, pixels, bias_part);  // gn's rows: in L1 from the transpose
    accumulate_weight_grad_by_filter(grid, offsets, plane.data(), gT, filter_vectors, acc.data());
  }
  const T* lanes = reinterpret_cast<const T*>(acc.data());
  for (int64_t k = 0; k < filters; ++k) {
    for (int64_t r = 0; r < taps; ++r) part[k * taps + r] = lanes[r * row + k];
  }
}

// A weight gradient's sum over the batch, as the im2col path takes it: each pool thread sums a
// fixed, contiguous share of the images, and the shares are added in order, so the result does
// not change from run to run. share(first, last, part, bias_part) sums images [first, last)
// into part [filters, taps] and, when grad_bias is wanted, bias_part [filters] (zeros at the
// start); grad_weight may be null (not wanted).
template <class T, class ShareFn>
void sum_over_shares(const ConvLayout& g, T* grad_weight, T* grad_bias, ShareFn&& share) {
  const int64_t weights = g.filters * g.patch_size();
  const int64_t shares = std::max<int64_t>(1, std::min<int64_t>(g.batch, pool_size()));
  std::vector<T> partials(static_cast<size_t>(shares * weights));
  std::vector<double> bias_partials(grad_bias ? static_cast<size_t>(shares * g.filters) : 0);  // zeros
  parallel_for(shares, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      share(g.batch * i / shares, g.batch * (i + 1) / shares, partials.data() + i * weights,
            grad_bias ? bias_partials.data() + i * g.filters : nullptr);
    }
  });
  if (grad_weight) {
    std::copy_n(partials.data(), weights, grad_weight);
    for (int64_t i = 1; i < shares; ++i) {
      const T* part = partials.data() + i * weights;
      for (int64_t w = 0; w < weights; ++w) grad_weight[w] += part[w];
    }
  }
  for (int64_t k = 0; grad_bias && k < g.filters; ++k) {
    double sum = 0;
    for (int64_t i = 0; i < shares; ++i) sum += bias_partials[static_cast<size_t>(i * g.filters + k)];
    grad_bias[k] = static_cast<T>(sum);
  }
}

template <class T>
void direct_conv_backward_weight(const ConvLayout& g, const T* grad_out, const T* x, T* grad_weight, T* grad_bias) {
  const Grid grid = input_grid(g);
  const std::vector<int64_t> offsets = grid.tap_offsets();
  const int64_t taps = grid.taps();
  // Filters [0, lane_filters) along the filters, the rest along the grid's pixels.
  const bool by_filter = weight_grad_lanes(g) == WeightGradLanes::filters;
  const int64_t lane_filters = by_filter ? g.filters - filters_left_to_grid<T>(g.filters) : 0;
  const FilterRange by_pixel{lane_filters, g.filters - lane_filters};
  sum_over_shares(g, grad_weight, grad_bias, [&](int64_t first, int64_t last, T* part, double* bias_part) {
    if (lane_filters > 0) {
      weight_grad_by_filter(g, grid, offsets.data(), grad_out, x, first, last, {0, lane_filters}, part, bias_part);
    }
    if (by_pixel.count > 0) {
      weight_grad_by_pixel(g, grid, offsets.data(), grad_out, x, first, last, by_pixel, part + lane_filters * taps,
                           bias_part ? bias_part + lane_filters : nullptr);
    }
  });
}

// ---- the convolution, an activation and average pooling in one op ----
// Image by image, in the pool's threads: the convolution on the grid (correlate_plane) into a
// stage that stays in the thread's cache, then each filter's plane taken out of it, through F and
// pooled. The backward computes the stage again from x, takes the pooling's and F's gradient
// plane by plane onto the grid, and runs the weight gradient (accumulate_weight_grad) and the
// input gradient (scatter_input_grad) on it while it is in cache. The convolution's output and
// its gradient are never written to memory: on lenet-relu's first layer these are 13.8 MB maps
// that the separate ops wrote and read back 5 times a step.

// Filter k's pooled plane out [Po, Qo] from its convolution output on the grid (stage_k), through
// F, for 2x2 windows, each window's sum added in the order of pool2d.cpp's 2x2 loops, so the bits
// are the separate kernels'. With an even width and grid width, no column pair straddles two grid
// rows: the pairs' sums of all the rows are one contiguous pass into `buffer` (the grid's width
// times Po), and each window adds two of them. Else a pair of rows at a time is activated into
// `buffer` (4 Qo).
template <class T, class F>
void two_by_two_pool_from_grid(const Grid& grid, const PoolLayout& p, const T* stage_k, T* buffer, T* out) {
  const int64_t pw = p.cols.out, used = 2 * pw;
  const bool even_width = used == grid.out_w();
  const F f;
  if (even_width && grid.width % 2 == 0) {
    // Up to the last window's last column: the grid's span may end there.
    const int64_t pairs = ((2 * p.rows.out - 1) * grid.width + used) / 2, half = grid.width / 2;
    for (int64_t j = 0; j < pairs; ++j) buffer[j] = f(stage_k[2 * j]) + f(stage_k[2 * j + 1]);
    for (int64_t r = 0; r < p.rows.out; ++r) {
      const T* top = buffer + r * grid.width;
      for (int64_t j = 0; j < pw; ++j) out[r * pw + j] = (top[j] + top[half + j]) * T(0.25);
    }
    return;
  }
  T* top = buffer;
  T* bottom = buffer + used;
  for (int64_t r = 0; r < p.rows.out; ++r) {
    const T* a = stage_k + 2 * r * grid.width;
    const T* b = a + grid.width;
    for (int64_t x = 0; x < used; ++x) {
      top[x] = f(a[x]);
      bottom[x] = f(b[x]);
    }
    T* o = out + r * pw;
    if (even_width) {
      for (int64_t j = 0; j < pw; ++j)
        o[j] = ((top[2 * j] + top[2 * j + 1]) + (bottom[2 * j] + bottom[2 * j + 1])) * T(0.25);
    } else {
      for (int64_t j = 0; j < pw; ++j)
        o[j] = (top[2 * j] + top[2 * j + 1] + bottom[2 * j] + bottom[2 * j + 1]) * T(0.25);
    }
  }
}

template <class T, class F> void direct_conv_pool_forward(const ConvLayout& g, const PoolLayout& p, const T* x,
                                                          const T* weight, const T* bias, T* out) {
  const Grid grid = input_grid(g);
  const std::vector<int64_t> offsets = grid.tap_offsets();
  const std::vector<T> taps_major = taps_major_of(weight, g.filters, grid.taps());
  const int64_t filters = g.filters;
  const bool two_by_two = is_two_by_two(p);
  parallel_for(g.batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> plane(static_cast<size_t>(grid.plane_size<T>()));
    std::vector<T> stage(static_cast<size_t>(filters * grid.span<T>())), map(static_cast<size_t>(p.in_plane()));
    std::vector<T> pool_buffer(
        static_cast<size_t>(std::max({p.rows.out * grid.width, 4 * p.cols.out, average_plane_scratch(p)})));
    for (int64_t n = begin; n < end; ++n) {
      pad_into(grid, x + n * g.image_size(), plane.data());
      correlate_plane(grid, offsets.data(), plane.data(), taps_major.data(), filters, bias, stage.data());
      for (int64_t k = 0; k < filters; ++k) {
        if (two_by_two) {
          two_by_two_pool_from_grid<T, F>(grid, p, stage.data() + k * grid.span<T>(), pool_buffer.data(),
                                          out + (n * filters + k) * p.out_plane());
          continue;
        }
        unstage_filter(grid, stage.data(), k, map.data());
        average_activated_plane<T, F>(map.data(), p, out + (n * filters + k) * p.out_plane(), pool_buffer.data());
      }
    }
  });
}

// Filter k's gradient on the grid, g_k, from the pooled gradient grad [Po, Qo] of 2x2 windows:
// each window's share spread over its four outputs in `shares` (the grid's rows 0 to 2 Po), then
// times F's derivative at the convolution's output (stage_k, on the grid) in one contiguous pass.
// Where no window reaches, g_k stays zero: the columns past 2 Qo (an odd last column, the grid's
// dropped columns) get share 0 times a derivative, and an odd last row is never written.
template <class T, class F> void two_by_two_grad_on_grid(const Grid& grid, const PoolLayout& p, const T* grad,
                                                         const T* stage_k, T* shares, T* g_k) {
  const int64_t width = grid.width, pw = p.cols.out, rows = 2 * p.rows.out;
  for (int64_t r = 0; r < p.rows.out; ++r) {
    T* top = shares + 2 * r * width;
    for (int64_t j = 0; j < pw; ++j) {
      const T share = grad[r * pw + j] * T(0.25);
      top[2 * j] = top[2 * j + 1] = top[width + 2 * j] = top[width + 2 * j + 1] = share;
    }
  }
  const F f;
  const int64_t covered = rows > 0 ? (rows - 1) * width + 2 * pw : 0;  // up to the last window's last output
  for (int64_t i = 0; i < covered; ++i) g_k[i] = f.backward(shares[i], stage_k[i], f(stage_k[i]));
}

template <class T, class F> void direct_conv_pool_backward(const ConvLayout& g, const PoolLayout& p, const T* grad_out,
                                                           const T* x, const T* weight, const T* bias, T* grad_x,
                                                           T* grad_weight, T* grad_bias) {
  using Vec = typename Simd<T>::Vec;
  const Grid grid = input_grid(g);
  const std::vector<int64_t> offsets = grid.tap_offsets();
  const std::vector<T> taps_major = taps_major_of(weight, g.filters, grid.taps());
  const std::vector<T> window_major = grad_x ? window_major_of(g, weight) : std::vector<T>();
  const int64_t filters = g.filters, span = grid.span<T>();
  const int64_t weights = filters * grid.taps();
  const bool two_by_two = is_two_by_two(p);
  sum_over_shares(g, grad_weight, grad_bias, [&](int64_t first, int64_t last, T* part, double* bias_part) {
    std::vector<T> plane(static_cast<size_t>(grid.plane_size<T>())), input_grad;
    std::vector<T> stage(static_cast<size_t>(filters * span)), map(static_cast<size_t>(p.in_plane()));
    std::vector<T> map_grad(static_cast<size_t>(p.in_plane()));
    std::vector<T> shares(static_cast<size_t>(2 * p.rows.out * grid.width));  // two_by_two_grad_on_grid's
    // The gradient on the grid, rows on vector boundaries; zeros wherever no window reaches.
    std::vector<Vec> grad_vectors(static_cast<size_t>(filters * span / Simd<T>::kLanes));
    T* grads = reinterpret_cast<T*>(grad_vectors.data());
    std::vector<Vec> acc(static_cast<size_t>(grad_weight ? weights : 0));
    if (grad_x) input_grad.resize(static_cast<size_t>(grid.plane_size<T>()));
    for (int64_t n = first; n < last; ++n) {
      pad_into(grid, x + n * g.image_size(), plane.data());
      // Without an activation the pooling's gradient does not depend on the convolution's output.
      constexpr bool reads_map = !std::is_same_v<F, functors::Identity>;
      if (reads_map) {
        correlate_plane(grid, offsets.data(), plane.data(), taps_major.data(), filters, bias, stage.data());
      }
      for (int64_t k = 0; k < filters; ++k) {
        const T* grad_k = grad_out + (n * filters + k) * p.out_plane();
        if (two_by_two) {  // straight from the stage onto the grid
          two_by_two_grad_on_grid<T, F>(grid, p, grad_k, stage.data() + k * span, shares.data(), grads + k * span);
          continue;
        }
        if (reads_map) unstage_filter(grid, stage.data(), k, map.data());
        average_activated_plane_backward<T, F>(grad_k, map.data(), p, map_grad.data());
        stage_on_grid(grid, map_grad.data(), 1, grads + k * span);
      }
      if (bias_part) add_row_sums(grads, filters, span, bias_part);
      if (grad_weight) accumulate_weight_grad(grid, offsets.data(), 1, plane.data(), grads, filters, acc.data());
      if (grad_x) {
        std::fill(input_grad.begin(), input_grad.end(), T(0));
        scatter_input_grad(grid, grads, filters, window_major.data(), input_grad.data());
        unpad_from(grid, input_grad.data(), grad_x + n * g.image_size());
      }
    }
    for (int64_t i = 0; grad_weight && i < weights; ++i) part[i] = Simd<T>::sum(acc[static_cast<size_t>(i)]);
  });
}

#define DUET_DIRECT_CONV_POOL(T, F)                                                                                 \
  template void direct_conv_pool_forward<T, F>(const ConvLayout&, const PoolLayout&, const T*, const T*, const T*,  \
                                               T*);                                                                 \
  template void direct_conv_pool_backward<T, F>(const ConvLayout&, const PoolLayout&, const T*, const T*, const T*, \
                                                const T*, T*, T*, T*);
#define DUET_DIRECT_CONV_POOLS(F) DUET_DIRECT_CONV_POOL(float, F) DUET_DIRECT_CONV_POOL(double, F)
DUET_DIRECT_CONV_POOLS(functors::Identity)
DUET_DIRECT_CONV_POOLS(functors::Relu)
DUET_DIRECT_CONV_POOLS(functors::Sigmoid)
DUET_DIRECT_CONV_POOLS(functors::Tanh)
#undef DUET_DIRECT_CONV_POOLS
#undef DUET_DIRECT_CONV_POOL

#define DUET_DIRECT_CONV(T)                                                                  \
  template void direct_conv_forward<T>(const ConvLayout&, const T*, const T*, const T*, T*); \
  template void direct_conv_backward_input<T>(const ConvLayout&, const T*, const T*, T*);    \
  template void direct_conv_backward_weight<T>(const ConvLayout&, const T*, const T*, T*, T*);
DUET_DIRECT_CONV(float)
DUET_DIRECT_CONV(double)
#undef DUET_DIRECT_CONV

}  // namespace duet::kernels::cpu
