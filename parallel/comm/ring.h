// The ring's arithmetic: how a flat tensor is cut into world_size chunks and how many bytes
// each rank sends in a reduce-scatter, an all-gather, and an all-reduce (the two in a row). The
// local ring runs it; the MPI and NCCL communicators, which use their libraries' own algorithms,
// report the same figures as a model (the cost model of docs/parallel-strategies.md).
#pragma once

#include <cstdint>

namespace duet::parallel::ring {

struct Range {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// Chunk i (taken mod n) of [0, numel) cut into n balanced chunks: sizes differ by at most one,
// and chunks are empty when numel < n.
inline Range chunk(int64_t numel, int n, int64_t i) {
  i = ((i % n) + n) % n;
  return {i * numel / n, (i + 1) * numel / n};
}

// A ring runs in phases of n-1 steps; at each step every rank sends one chunk to its right
// neighbour. Reduce-scatter: after its steps the rank owns one chunk reduced over all ranks.
// All-gather: the rank starts owning one chunk and ends holding all of them. Either way a
// rank sends every chunk but one: this one returns the bytes of all but chunk `unsent`.
inline int64_t phase_bytes_sent(int64_t numel, int64_t element_size, int n, int64_t unsent) {
  if (n <= 1) return 0;
  return (numel - chunk(numel, n, unsent).size()) * element_size;
}

// Bytes `rank` sends in a ring all-reduce: a reduce-scatter whose rank r ends owning chunk
// r+1 (so it sends every chunk but r+1), then an all-gather that sends every chunk but r+2.
// 2(n-1)/n of the tensor when n divides numel, and 2(n-1) tensors over all ranks.
inline int64_t all_reduce_bytes_sent(int64_t numel, int64_t element_size, int n, int rank) {
  return phase_bytes_sent(numel, element_size, n, rank + 1) + phase_bytes_sent(numel, element_size, n, rank + 2);
}

// Bytes `rank` sends in a stand-alone reduce-scatter of `numel` elements (n equal chunks; rank
// r ends owning chunk r), or in an all-gather into `numel` elements: (n-1)/n of the buffer.
inline int64_t reduce_scatter_bytes_sent(int64_t numel, int64_t element_size, int n, int rank) {
  return phase_bytes_sent(numel, element_size, n, rank);
}

}  // namespace duet::parallel::ring
