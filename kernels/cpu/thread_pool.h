// The CPU kernels' one thread pool: persistent workers that share ranges of a loop.
//
// Several callers (one per logical CPU device) may run parallel loops at once: their jobs
// queue up, workers take chunks from the oldest job, and each caller also works on its own
// job, so every job finishes even when all workers are busy elsewhere. A loop started from
// inside a chunk runs inline: there is no nested parallelism, hence no oversubscription.
//
// Logical CPU devices can also have cores of their own (place_cpu_devices): cpu:i then gets a
// pool of its own whose workers are pinned to its cores, and a thread that works for cpu:i
// (the engine's device worker, a replica's thread, its communicator's thread) binds itself to
// that pool and those cores. Its parallel loops then run on cpu:i's cores alone, so N devices
// compute side by side as N GPUs would, instead of taking turns on one shared pool
// (docs/parallel-strategies.md, "CPU devices with cores of their own").
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
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

// Work that the pools' workers take up in slices of a few microseconds between parallel loops,
// where they would otherwise spin waiting for the next one: the DataLoader's next batches
// (data/dataloader.cpp). A training step on every core leaves no core idle for a background
// thread, but its workers spin while the caller runs the step's serial parts (a tenth of an
// mlp step on 2 cores). run_slice() does one slice and says whether there was one; a worker
// that ran one spins on for the next loop instead of going to sleep. A slice must not throw.
class IdleWork {
 public:
  virtual ~IdleWork() = default;
  virtual bool run_slice() = 0;
};
// Offers `work` to every pool's workers until it is withdrawn.
void offer_idle_work(std::shared_ptr<IdleWork> work);
// Withdraws `work` and waits for its slices that are running: after this no worker is in it.
// Never call it from one of its own slices.
void withdraw_idle_work(const IdleWork* work);

// Threads that may work on one loop of the calling thread: its device's pool when it is bound
// to a device with cores of its own, else the shared pool; the workers plus the caller.
int pool_size();
// Resizes the shared pool (at least 1 thread, i.e. no workers). Waits for running work to finish.
void set_pool_size(int threads);

// The CPU ids this process may run on (its affinity mask when it started using the pool).
std::vector<int> available_cores();

// Where the logical CPU devices run.
struct CpuPlacement {
  int cores_per_device = 0;             // 0: every device shares the one pool (the default)
  std::vector<std::vector<int>> cores;  // cores[i]: the CPU ids cpu:i's pool is pinned to
  std::string note;                     // why the devices share, when cores were asked for but missing
  bool pinned() const { return !cores.empty(); }
};

// Gives cpu:0..devices-1 `cores_per_device` cores each, from the `first_core`-th available core
// on (a process of an MPI job takes its share this way), and builds their pools. When the
// cores are not there, nothing is pinned: the devices share the one pool, and the result's
// note says why. Replaces any earlier placement; waits for running work of the old pools.
CpuPlacement place_cpu_devices(int devices, int cores_per_device, int first_core = 0);
// Back to one shared pool for every device, nothing pinned.
void share_cpu_devices();
CpuPlacement cpu_placement();

// Makes the calling thread work for logical device cpu:index from now on: its loops run on
// that device's pool and the thread is pinned to its cores, or, when cpu:index has no cores of
// its own, on the shared pool with the process's own affinity. Cheap when nothing changed, so
// persistent threads call it before each job.
void bind_thread_to_cpu_device(int index);
// Moves `thread`, just started by the caller to work for cpu:index, onto that device's cores
// from outside, before the thread binds itself. A new thread inherits its creator's cores: when
// the creator is pinned to a busy core, the new thread would first wait there for a time slice
// before it could move itself (docs/experiments.md: DataParallel's second replica started late).
void place_new_thread(std::thread& thread, int index);
// The same for one scope: the thread's earlier binding (or none) comes back at its end.
class CpuDeviceScope {
 public:
  explicit CpuDeviceScope(int index);
  ~CpuDeviceScope();
  CpuDeviceScope(const CpuDeviceScope&) = delete;
  CpuDeviceScope& operator=(const CpuDeviceScope&) = delete;

 private:
  int previous_;
};
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
