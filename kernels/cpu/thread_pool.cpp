#include "duet/kernels/cpu/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "duet/core/error.h"

namespace duet::kernels::cpu {
namespace {

thread_local bool t_in_parallel_region = false;

// How long a thread spins (spin_while) before it sleeps.
constexpr std::chrono::microseconds kSpin{50};

// The idle work on offer (offer_idle_work), with the slices of each running now. Workers read
// the count without the lock, so that spinning with nothing on offer costs what it did.
struct IdleWorks {
  struct Offer {
    std::shared_ptr<IdleWork> work;
    int running = 0;  // slices running now
  };
  std::mutex mutex;
  std::condition_variable slice_ended;
  std::vector<std::shared_ptr<Offer>> offers;
  std::atomic<int> count{0};
};
IdleWorks& idle_works() {
  static IdleWorks* instance = new IdleWorks;  // never destroyed: workers may outlive statics
  return *instance;
}

// Runs one slice of the first offered work that has one.
bool run_idle_slice() {
  IdleWorks& offered = idle_works();
  if (offered.count.load(std::memory_order_acquire) == 0) return false;
  for (size_t i = 0;; ++i) {
    std::shared_ptr<IdleWorks::Offer> offer;
    {
      std::lock_guard lock(offered.mutex);
      if (i >= offered.offers.size()) return false;
      offer = offered.offers[i];
      ++offer->running;
    }
    const bool ran = offer->work->run_slice();
    {
      std::lock_guard lock(offered.mutex);
      --offer->running;
    }
    offered.slice_ended.notify_all();
    if (ran) return true;
  }
}

// One parallel loop: chunks are claimed with an atomic counter by whoever is free.
class Job {
 public:
  Job(int64_t n, int64_t chunks, RangeFn fn) : n_(n), chunks_(chunks), fn_(fn) {}

  // Runs chunks until none is left to claim.
  void work() {
    for (int64_t c = next_.fetch_add(1); c < chunks_; c = next_.fetch_add(1)) run_chunk(c);
  }
  bool exhausted() const { return next_.load() >= chunks_; }

  // The caller spins before it sleeps too: the other threads' chunks usually end within
  // microseconds of its own, sooner than a sleep and a wake-up through the scheduler take
  // (docs/performance.md).
  void wait_and_rethrow() {
    spin_while([this] { return done_.load(std::memory_order_acquire) < chunks_; }, kSpin);
    for (int64_t d = done_.load(); d < chunks_; d = done_.load()) done_.wait(d);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void run_chunk(int64_t c) {
    int64_t begin = n_ * c / chunks_, end = n_ * (c + 1) / chunks_;
    bool was_inside = t_in_parallel_region;
    t_in_parallel_region = true;
    try {
      fn_(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    t_in_parallel_region = was_inside;
    if (done_.fetch_add(1) + 1 == chunks_) done_.notify_all();
  }

  const int64_t n_, chunks_;
  RangeFn fn_;
  std::atomic<int64_t> next_{0}, done_{0};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// The process's affinity mask as it was before any thread was pinned, captured once.
const cpu_set_t& process_mask() {
  static const cpu_set_t mask = [] {
    cpu_set_t m;
    CPU_ZERO(&m);
    if (sched_getaffinity(0, sizeof m, &m) != 0) {
      for (unsigned i = 0; i < std::max(1u, std::thread::hardware_concurrency()) && i < CPU_SETSIZE; ++i)
        CPU_SET(i, &m);
    }
    return m;
  }();
  return mask;
}

// Set once a placement pinned anything: from then on threads without a device of their own are
// given the process's mask back explicitly (a thread inherits its creator's, which may be pinned).
std::atomic<bool> g_ever_pinned{false};

// Pins `thread` to `cores`, or, when there are none, gives it the process's mask back (needed
// only once a placement pinned anything). Failure leaves the thread where it was: slower, not wrong.
void pin(pthread_t thread, const std::vector<int>& cores) {
  if (cores.empty()) {
    if (g_ever_pinned.load()) (void)pthread_setaffinity_np(thread, sizeof(cpu_set_t), &process_mask());
    return;
  }
  cpu_set_t m;
  CPU_ZERO(&m);
  for (int c : cores) CPU_SET(c, &m);
  (void)pthread_setaffinity_np(thread, sizeof m, &m);
}

int default_pool_size() {
  if (const char* env = std::getenv("DUET_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1) return n;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

class Pool {
 public:
  // cores: where the workers run (empty: anywhere the process may).
  explicit Pool(int threads, std::vector<int> cores = {}) : cores_(std::move(cores)) { start(threads); }
  ~Pool() { stop(); }

  int size() const { return size_.load(std::memory_order_relaxed); }

  void resize(int threads) {
    std::lock_guard<std::mutex> resizing(resize_mutex_);
    stop();
    start(threads);
  }

  void run(int64_t n, int64_t chunks, RangeFn fn) {
    auto job = std::make_shared<Job>(n, chunks, fn);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(job);
      queued_.fetch_add(1, std::memory_order_release);
    }
    for (int64_t i = 1; i < chunks; ++i) wake_.notify_one();
    job->work();  // the caller works too, so the job ends even if every worker is busy
    remove(job.get());
    job->wait_and_rethrow();
  }

 private:
  void start(int threads) {
    stop_ = false;
    size_.store(threads);
    for (int i = 1; i < threads; ++i) {
      workers_.emplace_back([this] {
        pin(pthread_self(), cores_);
        worker_loop();
      });
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }

  // A worker that just finished a job looks for the next one for a while before it sleeps: a
  // training step runs its parallel loops back to back. Meanwhile it runs slices of idle work;
  // each one restarts the wait, since the caller is evidently still busy.
  void spin_for_work() {
    const auto no_job = [this] { return queued_.load(std::memory_order_acquire) == 0; };
    auto until = std::chrono::steady_clock::now() + kSpin;
    while (no_job() && std::chrono::steady_clock::now() < until) {
      if (run_idle_slice()) {
        until = std::chrono::steady_clock::now() + kSpin;
        continue;
      }
      for (int i = 0; i < 64 && no_job(); ++i) spin_pause();
    }
  }

  void worker_loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (queue_.empty() && !stop_) {
        lock.unlock();
        spin_for_work();
        lock.lock();
      }
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      std::shared_ptr<Job> job = queue_.front();  // keeps the job alive past its caller's return
      lock.unlock();
      job->work();
      lock.lock();
      remove_locked(job.get());
    }
  }

  void remove(Job* job) {
    std::lock_guard<std::mutex> lock(mutex_);
    remove_locked(job);
  }
  void remove_locked(Job* job) {
    auto it = std::find_if(queue_.begin(), queue_.end(), [job](const auto& j) { return j.get() == job; });
    if (it != queue_.end()) {
      queue_.erase(it);
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
  }

  std::mutex mutex_, resize_mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::atomic<int> queued_{0};  // queue_.size(), readable without the mutex
  const std::vector<int> cores_;
  std::vector<std::thread> workers_;
  bool stop_ = false;
  std::atomic<int> size_{1};
};

Pool& shared_pool() {
  static Pool instance(default_pool_size());
  return instance;
}

// The devices' own pools. Every placement bumps the generation, which tells each bound thread
// that its pool is stale.
struct Placement {
  std::mutex mutex;
  CpuPlacement placement;
  std::vector<std::shared_ptr<Pool>> pools;  // pools[i]: cpu:i's
  std::atomic<uint64_t> generation{1};
};
Placement& placement_state() {
  static Placement instance;
  return instance;
}

struct Binding {
  int device = -1;  // the logical CPU device this thread works for; -1: none
  uint64_t generation = 0;
  std::shared_ptr<Pool> pool;  // null: the shared pool
};
thread_local Binding t_binding;

// cpu:index's cores; none when it has no cores of its own or index is -1.
std::vector<int> cores_of(int index) {
  Placement& state = placement_state();
  std::lock_guard lock(state.mutex);
  if (index < 0 || static_cast<size_t>(index) >= state.placement.cores.size()) return {};
  return state.placement.cores[static_cast<size_t>(index)];
}

// (Re)binds the calling thread to cpu:index (-1: to no device).
void bind(int index) {
  Placement& state = placement_state();
  const uint64_t generation = state.generation.load();
  if (t_binding.device == index && t_binding.generation == generation) return;
  std::shared_ptr<Pool> pool;
  std::vector<int> cores;
  {
    std::lock_guard lock(state.mutex);
    if (index >= 0 && static_cast<size_t>(index) < state.pools.size()) {
      pool = state.pools[static_cast<size_t>(index)];
      cores = state.placement.cores[static_cast<size_t>(index)];
    }
  }
  pin(pthread_self(), cores);
  t_binding = {index, generation, std::move(pool)};
}

Pool& current_pool() {
  if (t_binding.device >= 0 && t_binding.generation != placement_state().generation.load()) bind(t_binding.device);
  return t_binding.pool ? *t_binding.pool : shared_pool();
}

}  // namespace

int pool_size() { return current_pool().size(); }

void set_pool_size(int threads) {
  DUET_CHECK(threads >= 1, "set_num_threads: expected at least 1 thread, got ", threads);
  DUET_CHECK(!t_in_parallel_region, "set_num_threads: called from inside a parallel loop");
  if (threads != shared_pool().size()) shared_pool().resize(threads);
}

bool in_parallel_region() { return t_in_parallel_region; }

void run_chunks(int64_t n, int64_t chunks, RangeFn fn) { current_pool().run(n, chunks, fn); }

void offer_idle_work(std::shared_ptr<IdleWork> work) {
  DUET_CHECK(work != nullptr, "offer_idle_work: no work");
  IdleWorks& offered = idle_works();
  std::lock_guard lock(offered.mutex);
  offered.offers.push_back(std::make_shared<IdleWorks::Offer>(IdleWorks::Offer{std::move(work)}));
  offered.count.store(static_cast<int>(offered.offers.size()), std::memory_order_release);
}

void withdraw_idle_work(const IdleWork* work) {
  IdleWorks& offered = idle_works();
  std::unique_lock lock(offered.mutex);
  auto it = std::find_if(offered.offers.begin(), offered.offers.end(),
                         [work](const auto& offer) { return offer->work.get() == work; });
  if (it == offered.offers.end()) return;
  std::shared_ptr<IdleWorks::Offer> offer = *it;
  offered.offers.erase(it);
  offered.count.store(static_cast<int>(offered.offers.size()), std::memory_order_release);
  offered.slice_ended.wait(lock, [&] { return offer->running == 0; });
}

std::vector<int> available_cores() {
  const cpu_set_t& mask = process_mask();
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &mask)) cores.push_back(c);
  }
  return cores;
}

CpuPlacement place_cpu_devices(int devices, int cores_per_device, int first_core) {
  DUET_CHECK(devices >= 1 && cores_per_device >= 1 && first_core >= 0,
             "place_cpu_devices: expected devices >= 1, cores_per_device >= 1 and first_core >= 0, got ", devices, ", ",
             cores_per_device, ", ", first_core);
  DUET_CHECK(!t_in_parallel_region, "place_cpu_devices: called from inside a parallel loop");
  const std::vector<int> cores = available_cores();
  CpuPlacement placement;
  placement.cores_per_device = cores_per_device;
  std::vector<std::shared_ptr<Pool>> pools;
  const int64_t needed = static_cast<int64_t>(first_core) + static_cast<int64_t>(devices) * cores_per_device;
  if (needed > static_cast<int64_t>(cores.size())) {
    placement.cores_per_device = 0;
    placement.note = std::to_string(devices) + " device(s) x " + std::to_string(cores_per_device) + " core(s)" +
                     (first_core ? " from core " + std::to_string(first_core) : std::string()) + " need " +
                     std::to_string(needed) + " cores, and this process may run on " + std::to_string(cores.size()) +
                     ": the devices share one pool of " + std::to_string(shared_pool().size()) + " threads instead";
  } else {
    g_ever_pinned = true;
    for (int d = 0; d < devices; ++d) {
      auto begin = cores.begin() + first_core + static_cast<int64_t>(d) * cores_per_device;
      placement.cores.emplace_back(begin, begin + cores_per_device);
      pools.push_back(std::make_shared<Pool>(cores_per_device, placement.cores.back()));
    }
  }
  Placement& state = placement_state();
  {
    std::lock_guard lock(state.mutex);
    state.placement = placement;
    state.pools = std::move(pools);  // a thread still bound to an old pool keeps it until it rebinds
    state.generation.fetch_add(1);
  }
  return placement;
}

void share_cpu_devices() {
  Placement& state = placement_state();
  std::lock_guard lock(state.mutex);
  state.placement = {};
  state.pools.clear();
  state.generation.fetch_add(1);
}

CpuPlacement cpu_placement() {
  Placement& state = placement_state();
  std::lock_guard lock(state.mutex);
  return state.placement;
}

void bind_thread_to_cpu_device(int index) {
  DUET_CHECK(index >= 0, "bind_thread_to_cpu_device: expected a device index >= 0, got ", index);
  bind(index);
}

void place_new_thread(std::thread& thread, int index) { pin(thread.native_handle(), cores_of(index)); }

CpuDeviceScope::CpuDeviceScope(int index) : previous_(t_binding.device) { bind_thread_to_cpu_device(index); }
CpuDeviceScope::~CpuDeviceScope() { bind(previous_); }

}  // namespace duet::kernels::cpu
