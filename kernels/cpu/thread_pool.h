// The CPU kernels' one thread pool: persistent workers that share ranges of a loop.
//
// Several callers (one per logical CPU device) may run parallel loops at once: their jobs
// queue up, workers take chunks from the oldest job, and each caller also works on its own
// job, so every job finishes even when all workers are busy elsewhere. A loop started from
// inside a chunk runs inline: there is no nested parallelism, hence no oversubscription.
#pragma once

#include <cstdint>
#include <type_traits>

namespace duet::kernels::cpu {

// A non-owning reference to a callable fn(begin, end); cheap to copy, never allocates.
class RangeFn {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cv_t<F>, RangeFn>)  // copies stay copies
  explicit RangeFn(F& fn)
      : object_(const_cast<void*>(static_cast<const void*>(&fn))),
        call_([](void* o, int64_t b, int64_t e) { (*static_cast<F*>(o))(b, e); }) {}
  void operator()(int64_t begin, int64_t end) const { call_(object_, begin, end); }

 private:
  void* object_;
  void (*call_)(void*, int64_t, int64_t);
};

// Threads that may work on one loop: the workers plus the calling thread.
int pool_size();
// Resizes the pool (at least 1 thread, i.e. no workers). Waits for running work to finish.
void set_pool_size(int threads);
// True while this thread runs a chunk of a parallel loop.
bool in_parallel_region();

// Splits [0, n) into at most `chunks` contiguous ranges and runs them on the pool, the caller
// included. Rethrows the first exception a chunk threw, after every chunk has ended.
void run_chunks(int64_t n, int64_t chunks, RangeFn fn);

// Runs fn(begin, end) over [0, n) in ranges of at least `grain` elements, on the pool.
// Inline (one call fn(0, n)) when the work is small, the pool has one thread, or when called
// from inside a parallel loop.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int64_t chunks = (n + grain - 1) / grain;
  int threads = pool_size();
  if (chunks > threads) chunks = threads;
  if (chunks <= 1 || in_parallel_region()) {
    fn(int64_t{0}, n);
    return;
  }
  std::remove_reference_t<F>& ref = fn;
  run_chunks(n, chunks, RangeFn(ref));
}

}  // namespace duet::kernels::cpu
