// CommThread: one rank's communication thread. It runs the rank's collectives one at a time, in
// the order they were submitted, so an async all-reduce overlaps the caller's compute (strategy
// B launches buckets from backward hooks) and async collectives complete in order.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "duet/parallel/comm/communicator.h"

namespace duet::parallel {

class CommThread {
 public:
  CommThread();
  ~CommThread();  // stop()
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  // Queues `task`; the Work completes when it has run, and throws a duet::Error with the
  // message of what it threw.
  std::shared_ptr<Work> submit(std::function<void()> task);
  // Runs what is queued, then joins the thread. Idempotent.
  void stop();

 private:
  class TaskWork;
  struct Item {
    std::function<void()> task;
    std::shared_ptr<TaskWork> work;
  };
  void loop();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

// A Communicator whose collectives run synchronously on a CommThread (local and MPI). The
// run_* functions execute there, one at a time; a derived destructor must call stop() first,
// so that no run_* is still using the derived object's members.
class QueuedCommunicator : public Communicator {
 protected:
  virtual void run_all_reduce(const Tensor& t, ReduceOp op) = 0;
  virtual void run_broadcast(const Tensor& t, int root) = 0;
  virtual void run_reduce(const Tensor& t, int root, ReduceOp op) = 0;
  virtual void run_all_gather(const Tensor& t, const Tensor& out) = 0;
  virtual void run_reduce_scatter(const Tensor& in, const Tensor& out, ReduceOp op) = 0;
  virtual void run_barrier() = 0;
  // Only for a communicator whose compresses() is true.
  virtual void run_all_reduce_compressed(const Tensor& t, GradCompression format, ReduceOp op);

  void stop() { thread_.stop(); }

 private:
  std::shared_ptr<Work> queue(std::function<void()> task);
  std::shared_ptr<Work> all_reduce_impl(const Tensor& t, ReduceOp op) final;
  std::shared_ptr<Work> broadcast_impl(const Tensor& t, int root) final;
  std::shared_ptr<Work> reduce_impl(const Tensor& t, int root, ReduceOp op) final;
  std::shared_ptr<Work> all_gather_impl(const Tensor& t, const Tensor& out) final;
  std::shared_ptr<Work> reduce_scatter_impl(const Tensor& in, const Tensor& out, ReduceOp op) final;
  std::shared_ptr<Work> barrier_impl() final;
  std::shared_ptr<Work> all_reduce_compressed_impl(const Tensor& t, GradCompression format, ReduceOp op) final;

  CommThread thread_;
};

}  // namespace duet::parallel
