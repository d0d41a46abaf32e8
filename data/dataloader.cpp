#include "duet/data/dataloader.h"

#include <atomic>
#include <chrono>
#include <cstring>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include "duet/autograd/factory.h"
#include "duet/kernels/cpu/thread_pool.h"  // spin_while

namespace duet::data {
namespace {

// Runs `probe` (a tiny allocation) and rethrows its error naming the option: a loader that
// cannot deliver its batches fails here, not later on its background thread.
template <class Probe> void check_option(const char* option, Probe&& probe) {
  try {
    probe();
  } catch (const Error& e) {
    DUET_FAIL("DataLoader: ", option, ": ", e.what());
  }
}

// A slice of a batch made in the background has about this many bytes of f32 output: a few
// microseconds of work (10 Fashion-MNIST images), so that the consumer, which fills the slices
// still missing from the batch it takes, shares the work at a fine grain with the loader's
// thread. A slice holds one example at least.
constexpr int64_t kSliceBytes = 32 << 10;

// While one example is converted, the one this many places further in the order is prefetched:
// each is a random read from a dataset larger than the caches (Fashion-MNIST's 47 MB), and waiting
// for it took most of make_batch's time: 0.070 ms for a batch of 256 images on one core, 0.036 to
// 0.044 with the prefetch (a throwaway program, batches made on demand).
constexpr int64_t kPrefetchAhead = 8;

// The background thread runs at the lowest priority there is (Linux's SCHED_IDLE). Where every
// core runs a compute thread, it then makes its batches while a core is free, rather than taking
// a core from a thread in the middle of a parallel loop, which holds the whole loop up: on this
// project's 2-core VM, making a batch took 0.04 ms and slowed the mlp forward matmul running
// beside it by 0.1 ms (0.58 against 0.48 ms); with this, mlp trained 5% faster (192,412 against
// 182,763 img/s, medians of 8 alternating duet_bench runs), lenet 2.6%, lenet-relu and 3 MPI
// ranks on 2 cores within 2% either way. It cannot starve: a consumer waiting for a batch leaves
// its core free. The creator sets it, so that the thread never runs at another priority. Best
// effort: where the call fails, the thread keeps its priority.
void set_idle_priority(std::thread& thread) {
#if defined(__linux__) && defined(SCHED_IDLE)
  sched_param param{};
  pthread_setschedparam(thread.native_handle(), SCHED_IDLE, &param);
#else
  (void)thread;
#endif
}

// One batch of a HostPipeline: allocated by the consumer, filled in slices by whoever claims them.
struct PendingBatch {
  int64_t index = 0;
  Batch batch;
  int64_t slices = 0;
  std::atomic<int64_t> claimed{0}, filled{0};
};

}  // namespace

// The host batches of one epoch, made ahead in slices of kSliceBytes. The consumer
// allocates each batch `prefetch` batches ahead of the one it takes. Their slices are filled by
// the loader's own thread at idle priority when a core is free, and for the batch it needs now,
// by the consumer itself.
class DataLoader::HostPipeline {
 public:
  HostPipeline(const DataLoader& loader, int64_t batches)
      : loader_(loader),
        batches_(batches),
        per_slice_(std::max<int64_t>(1, kSliceBytes / std::max<int64_t>(1, 4 * loader.example_numel()))) {}

  void start() {
    helper_ = std::thread([this] {
      std::unique_lock lock(mutex_);
      for (;;) {
        changed_.wait(lock, [&] { return stopped_.load() || first_unclaimed_locked(); });
        if (stopped_) return;
        lock.unlock();
        while (run_slice()) {
        }
        lock.lock();
      }
    });
    set_idle_priority(helper_);
  }

  // After this no other thread touches the loader: the helper thread has ended.
  void stop() {
    stopped_ = true;
    notify();
    if (helper_.joinable()) helper_.join();
  }

  Batch take(int64_t b) {
    std::shared_ptr<PendingBatch> pending;
    {
      std::lock_guard lock(mutex_);
      const int64_t wanted = std::min(batches_, b + 1 + loader_.options_.prefetch);
      for (; created_ < wanted; ++created_) {
        auto next = std::make_shared<PendingBatch>();
        next->index = created_;
        next->batch = loader_.allocate_batch(loader_.batch_count(loader_.order_, created_));
        next->slices = (next->batch.y.size(0) + per_slice_ - 1) / per_slice_;
        queue_.push_back(std::move(next));
      }
      pending = queue_.front();
      DUET_CHECK(pending->index == b, "DataLoader: batch ", pending->index, " is next, not ", b);
    }
    changed_.notify_all();  // the helper thread: there is work
    while (fill_slice(*pending)) {
    }
    // The last slices are someone else's; they take microseconds, unless the helper thread was
    // preempted in one: then sleeping frees the core it needs.
    kernels::cpu::spin_while([&] { return !filled(*pending); }, std::chrono::microseconds(20));
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return filled(*pending); });
    queue_.pop_front();
    return std::move(pending->batch);
  }

  std::thread::id thread() const { return helper_.get_id(); }
  int64_t made() const { return made_.load(); }

 private:
  // Fills one slice of the first batch that has one unclaimed; false when none has.
  bool run_slice() {
    if (stopped_) return false;
    std::shared_ptr<PendingBatch> pending;
    {
      std::lock_guard lock(mutex_);
      pending = first_unclaimed_locked();
    }
    return pending && fill_slice(*pending);
  }

  static bool filled(const PendingBatch& p) { return p.filled.load() == p.slices; }

  std::shared_ptr<PendingBatch> first_unclaimed_locked() const {
    for (const auto& p : queue_) {
      if (p->claimed.load() < p->slices) return p;
    }
    return nullptr;
  }

  // Claims the next slice of `p` and fills it; false when none was left.
  bool fill_slice(PendingBatch& p) {
    const int64_t slice = p.claimed.fetch_add(1);
    if (slice >= p.slices) return false;
    const int64_t begin = slice * per_slice_, end = std::min(begin + per_slice_, p.batch.y.size(0));
    loader_.fill_examples(loader_.order_, p.index * loader_.options_.batch_size, begin, end, p.batch);
    if (p.filled.fetch_add(1) + 1 == p.slices) {
      made_.fetch_add(1);
      notify();
    }
    return true;
  }

  void notify() {
    { std::lock_guard lock(mutex_); }  // a waiter has either seen the change or is asleep
    changed_.notify_all();
  }

  const DataLoader& loader_;
  const int64_t batches_;
  const int64_t per_slice_;  // examples
  std::mutex mutex_;
  std::condition_variable changed_;                  // a batch filled, work added, or stopped
  std::deque<std::shared_ptr<PendingBatch>> queue_;  // allocated and not yet taken, in order
  int64_t created_ = 0;
  std::thread helper_;
  std::atomic<bool> stopped_{false};
  std::atomic<int64_t> made_{0};  // batches whose every slice is filled
};

DataLoader::DataLoader(TensorDataset dataset, DataLoaderOptions options, std::shared_ptr<const Sampler> sampler)
    : dataset_(std::move(dataset)), options_(options), sampler_(std::move(sampler)) {
  DUET_CHECK(options_.batch_size > 0, "DataLoader: batch_size must be positive, got ", options_.batch_size);
  DUET_CHECK(options_.prefetch >= 0, "DataLoader: prefetch must be >= 0, got ", options_.prefetch);
  DUET_CHECK(dataset_.images.defined() && dataset_.labels.defined() && dataset_.images.dim() > 0 &&
                 dataset_.labels.dim() > 0 && dataset_.images.size(0) == dataset_.labels.size(0) &&
                 dataset_.images.device().is_cpu() && dataset_.labels.device().is_cpu(),
             "DataLoader: expected CPU images [N, ...] and targets [N, ...], got ", dataset_.images.describe(), " and ",
             dataset_.labels.describe());
  const DType image_dtype = dataset_.images.dtype();
  DUET_CHECK(image_dtype == DType::u8 || is_floating(image_dtype),
             "DataLoader: expected u8 images (scaled by 1/255) or floating-point ones, got ",
             dataset_.images.describe());
  DUET_CHECK(options_.normalize_std.value_or(1.0) > 0, "DataLoader: normalize_std must be positive");
  if (options_.pin_memory) check_option("pin_memory", [] { empty({1}, {.pin_memory = true}); });
  if (options_.device) check_option("device", [this] { empty({1}, {.device = *options_.device}); });
  if (!sampler_) {
    if (options_.shuffle) sampler_ = std::make_shared<RandomSampler>(options_.seed);
    else sampler_ = std::make_shared<SequentialSampler>();
  }
  // Batches are f32: f64 images are converted once here. A slice of a batch runs on the loader's
  // thread, where an error could not reach the caller, so every input is checked up front.
  dataset_.images = (image_dtype == DType::u8 ? dataset_.images : dataset_.images.to(DType::f32)).contiguous();
  // Integer targets (class labels) become i64, floating-point ones f32, as the inputs.
  dataset_.labels = dataset_.labels.to(is_floating(dataset_.labels.dtype()) ? DType::f32 : DType::i64).contiguous();
}

DataLoader::~DataLoader() { stop_producer(); }

int64_t DataLoader::num_examples() const {
  int64_t n = static_cast<int64_t>(sampler_->indices(dataset_.size(), 0).size());
  return options_.drop_last ? n / options_.batch_size * options_.batch_size : n;
}

int64_t DataLoader::num_batches() const { return (num_examples() + options_.batch_size - 1) / options_.batch_size; }

int64_t DataLoader::batch_count(const std::vector<int64_t>& order, int64_t b) const {
  return std::min<int64_t>(options_.batch_size, static_cast<int64_t>(order.size()) - b * options_.batch_size);
}

int64_t DataLoader::example_numel() const { return dataset_.images.numel() / std::max<int64_t>(dataset_.size(), 1); }

int64_t DataLoader::target_numel() const { return dataset_.labels.numel() / std::max<int64_t>(dataset_.size(), 1); }

Batch DataLoader::allocate_batch(int64_t count) const {
  Shape x_shape = dataset_.images.sizes(), y_shape = dataset_.labels.sizes();
  x_shape[0] = count;
  y_shape[0] = count;
  return {empty(x_shape, {.pin_memory = options_.pin_memory}),
          empty(y_shape, {.dtype = dataset_.labels.dtype(), .pin_memory = options_.pin_memory})};
}

void DataLoader::fill_examples(const std::vector<int64_t>& order, int64_t first, int64_t begin, int64_t end,
                               const Batch& batch) const {
  const int64_t per_example = example_numel();
  float* x = batch.x.data<float>();
  // Targets are copied as bytes: i64 or f32, of any shape per example.
  auto* y = static_cast<char*>(batch.y.data_ptr());
  const auto* targets = static_cast<const char*>(dataset_.labels.data_ptr());
  const size_t target_bytes = static_cast<size_t>(target_numel()) * dataset_.labels.element_size();
  double mean = options_.normalize_mean.value_or(0.0), stddev = options_.normalize_std.value_or(1.0);
  float scale = static_cast<float>(1.0 / stddev), shift = static_cast<float>(mean);
  bool is_u8 = dataset_.images.dtype() == DType::u8;
  const char* examples = is_u8 ? reinterpret_cast<const char*>(dataset_.images.data<uint8_t>())
                               : reinterpret_cast<const char*>(dataset_.images.data<float>());
  const int64_t example_bytes = per_example * (is_u8 ? 1 : static_cast<int64_t>(sizeof(float)));
  const auto known = static_cast<int64_t>(order.size());
  for (int64_t i = begin; i < end; ++i) {
    int64_t index = order[static_cast<size_t>(first + i)];
    if (first + i + kPrefetchAhead < known) {
      const char* ahead = examples + order[static_cast<size_t>(first + i + kPrefetchAhead)] * example_bytes;
      for (int64_t byte = 0; byte < example_bytes; byte += 64) __builtin_prefetch(ahead + byte);
    }
    std::memcpy(y + static_cast<size_t>(i) * target_bytes, targets + static_cast<size_t>(index) * target_bytes,
                target_bytes);
    float* dst = x + i * per_example;
    if (is_u8) {
      const uint8_t* src = dataset_.images.data<uint8_t>() + index * per_example;
      for (int64_t k = 0; k < per_example; ++k) dst[k] = (src[k] * (1.0f / 255.0f) - shift) * scale;
    } else {
      const float* src = dataset_.images.data<float>() + index * per_example;
      for (int64_t k = 0; k < per_example; ++k) dst[k] = (src[k] - shift) * scale;
    }
  }
}

Batch DataLoader::make_batch(const std::vector<int64_t>& order, int64_t b) const {
  const int64_t count = batch_count(order, b);
  Batch batch = allocate_batch(count);
  fill_examples(order, b * options_.batch_size, 0, count, batch);
  return batch;
}

Batch DataLoader::delivered(Batch batch) const {
  if (!options_.device) return batch;
  return {batch.x.to(*options_.device), batch.y.to(*options_.device)};
}

void DataLoader::start_epoch() {
  stop_producer();
  order_ = sampler_->indices(dataset_.size(), next_epoch_++);
  for (int64_t index : order_) {
    DUET_CHECK(index >= 0 && index < dataset_.size(), "DataLoader: the sampler gave index ", index,
               " for a dataset of ", dataset_.size(), " examples");
  }
  if (options_.drop_last) {
    order_.resize(order_.size() / static_cast<size_t>(options_.batch_size) * static_cast<size_t>(options_.batch_size));
  }
  consumed_ = 0;
  produced_ = 0;
  stop_ = false;
  error_ = nullptr;
  ready_.clear();
  if (options_.prefetch == 0) return;
  int64_t batches = num_batches();
  if (!options_.device) {
    host_ = std::make_unique<HostPipeline>(*this, batches);
    host_->start();
    return;
  }
  producer_ = std::thread([this, batches] {
    for (int64_t b = 0; b < batches; ++b) {
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stop_ || static_cast<int>(ready_.size()) < options_.prefetch; });
        if (stop_) return;
      }
      try {
        Batch batch = delivered(make_batch(order_, b));
        std::lock_guard lock(mutex_);
        ready_.push_back(std::move(batch));
        ++produced_;
      } catch (...) {
        std::lock_guard lock(mutex_);
        error_ = std::current_exception();
        produced_ = batches;
      }
      changed_.notify_all();
      if (error_) return;
    }
  });
  set_idle_priority(producer_);
}

void DataLoader::stop_producer() {
  if (host_) {
    host_->stop();
    host_.reset();
  }
  if (!producer_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  producer_.join();
}

std::optional<Batch> DataLoader::next_batch() {
  int64_t batches = (static_cast<int64_t>(order_.size()) + options_.batch_size - 1) / options_.batch_size;
  if (consumed_ >= batches) return std::nullopt;
  if (options_.prefetch == 0) return delivered(make_batch(order_, consumed_++));
  if (host_) return host_->take(consumed_++);
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty() || error_; });
  if (error_) std::rethrow_exception(error_);
  Batch batch = std::move(ready_.front());
  ready_.pop_front();
  ++consumed_;
  lock.unlock();
  changed_.notify_all();
  return batch;
}

std::thread::id DataLoader::prefetch_thread() const {
  if (host_) return host_->thread();
  return producer_.get_id();
}

int64_t DataLoader::batches_made() const {
  if (host_) return host_->made();
  std::lock_guard lock(mutex_);
  return produced_;
}

DataLoader::Iterator DataLoader::begin() {
  start_epoch();
  return Iterator(this);
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  std::optional<Batch> next = loader_->next_batch();
  if (next) current_ = std::move(*next);
  else loader_ = nullptr;
  return *this;
}

}  // namespace duet::data
