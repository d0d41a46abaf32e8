#include "duet/kernels/cpu/thread_pool.h"

#include <pthread.h>

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

#include "duet/core/cpu_affinity.h"
#include "duet/core/error.h"

namespace duet::kernels::cpu {
namespace {

thread_local bool t_in_parallel_region = false;

// How long a thread spins (spin_while) before it sleeps.
constexpr std::chrono::microseconds kSpin{50};

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

int default_pool_size() {
  if (const char* env = std::getenv("DUET_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1) return n;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

class ThreadPool::Impl {
 public:
  // cpus: where the workers run (empty: anywhere the process may).
  Impl(int threads, std::vector<int> cpus) : cpus_(std::move(cpus)) { start(threads); }
  ~Impl() { stop(); }

  const std::vector<int>& cpus() const { return cpus_; }

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
        pin_thread(pthread_self(), cpus_);
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
  // training step runs its parallel loops back to back.
  void spin_for_work() {
    spin_while([this] { return queued_.load(std::memory_order_acquire) == 0; }, kSpin);
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
  const std::vector<int> cpus_;
  std::vector<std::thread> workers_;
  bool stop_ = false;
  std::atomic<int> size_{1};
};

ThreadPool::ThreadPool(int threads, std::vector<int> cpus) {
  DUET_CHECK(threads >= 1, "ThreadPool: expected at least 1 thread, got ", threads);
  impl_ = std::make_unique<Impl>(threads, std::move(cpus));
}
ThreadPool::~ThreadPool() = default;
int ThreadPool::size() const { return impl_->size(); }
const std::vector<int>& ThreadPool::cpus() const { return impl_->cpus(); }
void ThreadPool::resize(int threads) {
  DUET_CHECK(threads >= 1, "ThreadPool::resize: expected at least 1 thread, got ", threads);
  DUET_CHECK(!t_in_parallel_region, "ThreadPool::resize: called from inside a parallel loop");
  if (threads != impl_->size()) impl_->resize(threads);
}
void ThreadPool::run(int64_t n, int64_t chunks, RangeFn fn) { impl_->run(n, chunks, fn); }

namespace {

ThreadPool& shared_pool() {
  static ThreadPool instance(default_pool_size());
  return instance;
}

thread_local std::shared_ptr<ThreadPool> t_pool;  // null: the shared pool

ThreadPool& current_pool() { return t_pool ? *t_pool : shared_pool(); }

}  // namespace

void use_thread_pool(std::shared_ptr<ThreadPool> pool) { t_pool = std::move(pool); }
const std::shared_ptr<ThreadPool>& thread_pool() { return t_pool; }

int pool_size() { return current_pool().size(); }

void set_pool_size(int threads) {
  DUET_CHECK(threads >= 1, "set_num_threads: expected at least 1 thread, got ", threads);
  DUET_CHECK(!t_in_parallel_region, "set_num_threads: called from inside a parallel loop");
  shared_pool().resize(threads);
}

bool in_parallel_region() { return t_in_parallel_region; }

void run_chunks(int64_t n, int64_t chunks, RangeFn fn) { current_pool().run(n, chunks, fn); }

}  // namespace duet::kernels::cpu
