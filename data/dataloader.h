// DataLoader: batches of (x, y) from a TensorDataset, made ahead so that loading overlaps
// compute.
//
//   data::DataLoader train(data::FashionMNIST::train(), {.batch_size = 256, .shuffle = true});
//   for (auto& [x, y] : train) { ... }   // x: f32 [B, 1, 28, 28] in [0, 1], y: i64 [B]
//
// y is the dataset's targets, batched whatever their shape [N, ...]: integer ones as i64,
// floating-point ones (regression targets) as f32.
//
// Batches for the host are made ahead in slices of a few microseconds each, by the loader's own
// worker thread, which runs at the lowest priority (Linux's SCHED_IDLE) so that it takes a free
// core and never one of the compute threads'; and by the consumer, for whatever of its next
// batch is still missing when it takes it. The kernels' thread pool has no part in it
// (docs/performance.md, "The data loader").
// PyTorch's DataLoader makes batches in worker processes instead (num_workers).
//
// Batches for another device are made whole by the loader's thread, which then sends them. For
// a GPU, {.pin_memory = true, .device = cuda_device(0)} has that thread assemble
// each batch in page-locked memory and queue its copy to the GPU asynchronously, so batch k+1
// is made and sent while the host queues step k's kernels. The copy runs on the device's one
// stream, so the kernels that use the batch always see it arrived.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "duet/data/dataset.h"
#include "duet/data/sampler.h"

namespace duet::data {

struct Batch {
  Tensor x;  // inputs, f32 [B, ...]
  Tensor y;  // targets [B, ...]: i64 class labels, or f32 (TensorDataset::labels)
};

struct DataLoaderOptions {
  int64_t batch_size = 256;
  bool shuffle = false;
  uint64_t seed = 0;
  bool drop_last = false;
  // u8 images become f32 x * (1 / 255), f32 and f64 images f32 x (other dtypes are refused at
  // construction); with these set, then (x - mean) * (1 / std). Each step is rounded on its own
  // in every build (no fused multiply-add), within an ulp of torchvision's ToTensor and
  // Normalize, which divide.
  std::optional<double> normalize_mean;
  std::optional<double> normalize_std;
  int prefetch = 2;  // batches made ahead of the one taken; 0 = each made on demand, when taken
  // Assemble batches in page-locked (pinned) host memory, from which copies to a GPU run
  // asynchronously. Needs a CUDA device: the constructor throws otherwise.
  bool pin_memory = false;
  // Deliver batches on this device, copied there by the background thread as soon as they are
  // made (asynchronously to a GPU when pin_memory is set). Unset: they stay on the host (cpu:0).
  std::optional<Device> device;
};

class DataLoader {
 public:
  // `sampler` overrides shuffle/seed (e.g. a DistributedSampler).
  DataLoader(TensorDataset dataset, DataLoaderOptions options = {}, std::shared_ptr<const Sampler> sampler = nullptr);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // The epoch the next iteration runs (it advances by one after each begin()).
  void set_epoch(int64_t epoch) { next_epoch_ = epoch; }
  int64_t next_epoch() const { return next_epoch_; }
  int64_t num_batches() const;
  int64_t num_examples() const;  // per epoch, after the sampler and drop_last
  const TensorDataset& dataset() const { return dataset_; }
  const DataLoaderOptions& options() const { return options_; }

  // Builds batch `b` of the given order on the host, pinned when pin_memory is set (what the
  // background thread runs before moving the batch to options().device).
  Batch make_batch(const std::vector<int64_t>& order, int64_t b) const;

  class Iterator {
   public:
    Iterator() = default;
    explicit Iterator(DataLoader* loader) : loader_(loader) { ++*this; }
    Batch& operator*() { return current_; }
    Batch* operator->() { return &current_; }
    Iterator& operator++();
    bool operator==(const Iterator& other) const { return done() == other.done(); }

   private:
    bool done() const { return loader_ == nullptr; }
    DataLoader* loader_ = nullptr;
    Batch current_;
  };
  Iterator begin();
  Iterator end() { return Iterator(); }

  // The thread that makes the batches of the epoch begun last ahead of the consumer: one thread
  // for all of the epoch, never the consumer or a worker of the kernels' pools. None before the
  // first epoch, or with prefetch 0.
  std::thread::id prefetch_thread() const;
  // Batches of the epoch begun last made whole so far, taken or not.
  int64_t batches_made() const;

 private:
  class HostPipeline;

  void start_epoch();
  void stop_producer();
  int64_t batch_count(const std::vector<int64_t>& order, int64_t b) const;
  int64_t example_numel() const;
  int64_t target_numel() const;  // per example
  Batch allocate_batch(int64_t count) const;
  // Fills examples [begin, end) of a batch whose first example is order[first].
  void fill_examples(const std::vector<int64_t>& order, int64_t first, int64_t begin, int64_t end,
                     const Batch& batch) const;
  Batch delivered(Batch batch) const;  // on options().device
  std::optional<Batch> next_batch();

  TensorDataset dataset_;
  DataLoaderOptions options_;
  std::shared_ptr<const Sampler> sampler_;
  int64_t next_epoch_ = 0;

  // The running epoch.
  std::vector<int64_t> order_;
  int64_t consumed_ = 0;
  std::unique_ptr<HostPipeline> host_;  // host batches: made in slices (dataloader.cpp)
  std::thread producer_;                // batches for options().device: made whole, then sent
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> ready_;
  int64_t produced_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace duet::data
