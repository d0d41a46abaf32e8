#include "duet/autograd/device_workers.h"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "duet/autograd/cpu_device_binding.h"

namespace duet::autograd {
namespace {

// One device's thread and ready queue.
class Worker {
 public:
  explicit Worker(Device device) : device_(device), thread_([this] { loop(); }) {}
  ~Worker() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void push(uint64_t priority, DeviceJob job) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back({priority, next_order_++, std::move(job)});
      std::push_heap(queue_.begin(), queue_.end(), Before());
    }
    wake_.notify_one();
  }

 private:
  struct Item {
    uint64_t priority;
    uint64_t order;  // FIFO among equal priorities
    DeviceJob job;
  };
  struct Before {
    bool operator()(const Item& a, const Item& b) const {
      return a.priority != b.priority ? a.priority < b.priority : a.order > b.order;
    }
  };

  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;  // at exit no backward is in flight, so nothing is lost
      std::pop_heap(queue_.begin(), queue_.end(), Before());
      DeviceJob job = std::move(queue_.back().job);
      queue_.pop_back();
      lock.unlock();
      // A logical CPU device with cores of its own runs its backward there (cheap when the
      // placement has not changed since the last job).
      if (device_.is_cpu()) bind_thread_to_cpu_device(device_.index);
      job();
      job = nullptr;  // drop what it captured before sleeping again
      lock.lock();
    }
  }

  const Device device_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Item> queue_;  // a max-heap under Before
  uint64_t next_order_ = 0;
  bool stopping_ = false;
  std::thread thread_;  // last: starts after the members it uses exist
};

// The workers, created on first use. A function-local static, so they are joined when the
// process (or the library) is torn down.
class Workers {
 public:
  Worker& of(Device device) {
    std::lock_guard lock(mutex_);
    std::unique_ptr<Worker>& worker = workers_[device];
    if (!worker) worker = std::make_unique<Worker>(device);
    return *worker;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<Device, std::unique_ptr<Worker>> workers_;
};

Workers& workers() {
  static Workers instance;
  return instance;
}

}  // namespace

void submit_to_device(Device device, uint64_t priority, DeviceJob job) {
  workers().of(device).push(priority, std::move(job));
}

}  // namespace duet::autograd
