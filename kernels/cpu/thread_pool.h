// The CPU kernels' thread pools: persistent workers that share ranges of a loop.
//
// Several callers may run parallel loops at once: their jobs queue up, workers take chunks from
// the oldest job, and each caller also works on its own job, so every job finishes even when all
// workers are busy elsewhere. A loop started from inside a chunk runs inline: there is no nested
// parallelism, hence no oversubscription.
//
// Besides the shared pool, a layer above may make pools of its own (ThreadPool: N threads,
// optionally pinned to given CPUs) and hand one to a thread (use_thread_pool): that thread's
// loops then run there. The kernels do not know why a thread got the pool it has.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

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

// A hint to the core that this thread is spinning (x86's pause); nothing elsewhere.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins while busy() holds, for at most `limit`: what a thread does before it sleeps, because a
// sleep and a wake cost tens of microseconds, as much as a small parallel loop.
template <class Busy> void spin_while(Busy&& busy, std::chrono::microseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (busy() && std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 64 && busy(); ++i) spin_pause();
  }
}

// A pool of `threads` threads (the caller of a loop counts as one: threads - 1 workers), whose
// workers are pinned to `cpus` when it names any.
class ThreadPool {
 public:
  explicit ThreadPool(int threads, std::vector<int> cpus = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;
  const std::vector<int>& cpus() const;
  // At least 1 thread. Waits for running work to finish.
  void resize(int threads);
  // Runs fn over [0, n) in `chunks` ranges on the workers and the caller; rethrows the first
  // exception a chunk threw, after every chunk has ended.
  void run(int64_t n, int64_t chunks, RangeFn fn);

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The calling thread's loops run on `pool` from now on; null: on the shared pool (the default).
// The thread keeps the pool alive while it uses it.
void use_thread_pool(std::shared_ptr<ThreadPool> pool);
// The pool handed to the calling thread; null when it uses the shared pool.
const std::shared_ptr<ThreadPool>& thread_pool();

// Threads that may work on one loop of the calling thread (its pool's workers plus itself).
int pool_size();
// Resizes the shared pool (at least 1 thread, i.e. no workers). Waits for running work to finish.
void set_pool_size(int threads);

// True while this thread runs a chunk of a parallel loop.
bool in_parallel_region();

// Splits [0, n) into at most `chunks` contiguous ranges and runs them on the pool, the caller
// included. Rethrows the first exception a chunk threw, after every chunk has ended.
void run_chunks(int64_t n, int64_t chunks, RangeFn fn);

// Runs fn(begin, end) over [0, n) in ranges of at least `grain` elements, on the pool.
// Inline (one call fn(0, n)) when the work is small, the pool has one thread, or when called
// from inside a parallel loop.
template <class F> void parallel_for(int64_t n, int64_t grain, F&& fn) {
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
