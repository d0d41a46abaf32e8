// The ring all-reduce's arithmetic: how a flat tensor is cut into world_size chunks and how
// many bytes each rank sends. The local ring runs it; the MPI communicator, which uses MPI's
// own algorithms, reports the same figure as a model (the cost model of docs/parallel-strategies.md).
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

// Bytes `rank` sends in a ring all-reduce (reduce-scatter, then all-gather, n-1 steps each).
// Rank r sends every chunk but r+1 in the reduce-scatter and every chunk but r+2 in the
// all-gather: 2(n-1)/n of the tensor when n divides numel, and 2(n-1) tensors over all ranks.
inline int64_t all_reduce_bytes_sent(int64_t numel, int64_t element_size, int n, int rank) {
  if (n <= 1) return 0;
  int64_t elements = 2 * numel - chunk(numel, n, rank + 1).size() - chunk(numel, n, rank + 2).size();
  return elements * element_size;
}

}  // namespace duet::parallel::ring
