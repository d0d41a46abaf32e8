#include "duet/parallel/comm/comm_thread.h"

#include <exception>

#include "duet/autograd/cpu_device_binding.h"
#include "duet/core/error.h"

namespace duet::parallel {

// Completion flag plus the task's error. A mutex and condition variable rather than
// std::future, so the hand-off is plain to TSan and wait() can be called repeatedly. The error
// travels as its message and is thrown afresh as a duet::Error on each waiting thread: an
// exception object shared across threads is reference-counted inside libstdc++, which TSan
// does not see, so it would report its release as a race.
class CommThread::TaskWork final : public Work {
 public:
  void wait() override {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return done_; });
    if (failed_) throw Error(error_);
  }
  std::optional<std::chrono::steady_clock::time_point> finished_at() const override {
    std::lock_guard lock(mutex_);
    if (!done_) return std::nullopt;
    return finished_at_;
  }
  void finish(bool failed, std::string error) {
    {
      std::lock_guard lock(mutex_);
      finished_at_ = std::chrono::steady_clock::now();
      done_ = true;
      failed_ = failed;
      error_ = std::move(error);
    }
    done_cv_.notify_all();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  std::chrono::steady_clock::time_point finished_at_;
  bool done_ = false;
  bool failed_ = false;
  std::string error_;
};

CommThread::CommThread() : thread_([this] { loop(); }) {}

CommThread::~CommThread() { stop(); }

std::shared_ptr<Work> CommThread::submit(std::function<void()> task) {
  auto work = std::make_shared<TaskWork>();
  {
    std::lock_guard lock(mutex_);
    DUET_CHECK(!stopping_, "collective submitted to a communicator that is shutting down");
    queue_.push_back({std::move(task), work});
  }
  ready_.notify_one();
  return work;
}

void CommThread::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void CommThread::loop() {
  for (;;) {
    Item item;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued has run
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    bool failed = false;
    std::string error;
    try {
      item.task();
    } catch (const std::exception& e) {
      failed = true;
      error = e.what();
    } catch (...) {
      failed = true;
      error = "collective failed with an unknown exception";
    }
    item.work->finish(failed, std::move(error));
  }
}

// A rank's copies and additions run on its device's cores when it has cores of its own.
std::shared_ptr<Work> QueuedCommunicator::queue(std::function<void()> task) {
  return thread_.submit([this, task = std::move(task)] {
    if (device().is_cpu()) autograd::bind_thread_to_cpu_device(device().index);
    task();
  });
}

// The tensors are captured by value: the handles keep the storage alive until the task ran.
std::shared_ptr<Work> QueuedCommunicator::all_reduce_impl(const Tensor& t, ReduceOp op) {
  return queue([this, t, op] {
    run_all_reduce(t, op);
    t.bump_version();
  });
}

std::shared_ptr<Work> QueuedCommunicator::all_reduce_compressed_impl(const Tensor& t, GradCompression format,
                                                                     ReduceOp op) {
  return queue([this, t, format, op] {
    run_all_reduce_compressed(t, format, op);
    t.bump_version();
  });
}

void QueuedCommunicator::run_all_reduce_compressed(const Tensor& t, GradCompression format, ReduceOp op) {
  Communicator::all_reduce_compressed_impl(t, format, op);  // throws: this communicator has none
}

std::shared_ptr<Work> QueuedCommunicator::broadcast_impl(const Tensor& t, int root) {
  return queue([this, t, root] {
    run_broadcast(t, root);
    if (rank() != root) t.bump_version();
  });
}

std::shared_ptr<Work> QueuedCommunicator::reduce_impl(const Tensor& t, int root, ReduceOp op) {
  return queue([this, t, root, op] {
    run_reduce(t, root, op);
    if (rank() == root) t.bump_version();
  });
}

std::shared_ptr<Work> QueuedCommunicator::all_gather_impl(const Tensor& t, const Tensor& out) {
  return queue([this, t, out] {
    run_all_gather(t, out);
    out.bump_version();
  });
}

std::shared_ptr<Work> QueuedCommunicator::reduce_scatter_impl(const Tensor& in, const Tensor& out, ReduceOp op) {
  return queue([this, in, out, op] {
    run_reduce_scatter(in, out, op);
    out.bump_version();
  });
}

std::shared_ptr<Work> QueuedCommunicator::barrier_impl() {
  return queue([this] { run_barrier(); });
}

}  // namespace duet::parallel
