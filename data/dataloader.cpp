#include "duet/data/dataloader.h"

#include <cstring>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include "duet/autograd/factory.h"

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
// its core free. Best effort: where the call fails, the thread keeps its priority.
void run_at_idle_priority() {
#if defined(__linux__) && defined(SCHED_IDLE)
  sched_param param{};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
#endif
}

}  // namespace

DataLoader::DataLoader(TensorDataset dataset, DataLoaderOptions options, std::shared_ptr<const Sampler> sampler)
    : dataset_(std::move(dataset)), options_(options), sampler_(std::move(sampler)) {
  DUET_CHECK(options_.batch_size > 0, "DataLoader: batch_size must be positive, got ", options_.batch_size);
  DUET_CHECK(options_.prefetch >= 0, "DataLoader: prefetch must be >= 0, got ", options_.prefetch);
  DUET_CHECK(dataset_.images.defined() && dataset_.labels.defined() &&
                 dataset_.images.size(0) == dataset_.labels.size(0) && dataset_.images.device().is_cpu(),
             "DataLoader: expected CPU images [N, ...] and labels [N], got ", dataset_.images.describe(), " and ",
             dataset_.labels.describe());
  DUET_CHECK(options_.normalize_std.value_or(1.0) > 0, "DataLoader: normalize_std must be positive");
  if (options_.pin_memory) check_option("pin_memory", [] { empty({1}, {.pin_memory = true}); });
  if (options_.device) check_option("device", [this] { empty({1}, {.device = *options_.device}); });
  if (!sampler_) {
    if (options_.shuffle) sampler_ = std::make_shared<RandomSampler>(options_.seed);
    else sampler_ = std::make_shared<SequentialSampler>();
  }
  dataset_.images = dataset_.images.contiguous();
  dataset_.labels = dataset_.labels.to(DType::i64).contiguous();
}

DataLoader::~DataLoader() { stop_producer(); }

int64_t DataLoader::num_examples() const {
  int64_t n = static_cast<int64_t>(sampler_->indices(dataset_.size(), 0).size());
  return options_.drop_last ? n / options_.batch_size * options_.batch_size : n;
}

int64_t DataLoader::num_batches() const { return (num_examples() + options_.batch_size - 1) / options_.batch_size; }

Batch DataLoader::make_batch(const std::vector<int64_t>& order, int64_t b) const {
  int64_t first = b * options_.batch_size;
  int64_t count = std::min<int64_t>(options_.batch_size, static_cast<int64_t>(order.size()) - first);
  Shape x_shape = dataset_.images.sizes();
  x_shape[0] = count;
  int64_t per_example = dataset_.images.numel() / std::max<int64_t>(dataset_.size(), 1);
  Batch batch{empty(x_shape, {.pin_memory = options_.pin_memory}),
              empty({count}, {.dtype = DType::i64, .pin_memory = options_.pin_memory})};
  float* x = batch.x.data<float>();
  int64_t* y = batch.y.data<int64_t>();
  const int64_t* labels = dataset_.labels.data<int64_t>();
  double mean = options_.normalize_mean.value_or(0.0), stddev = options_.normalize_std.value_or(1.0);
  float scale = static_cast<float>(1.0 / stddev), shift = static_cast<float>(mean);
  bool is_u8 = dataset_.images.dtype() == DType::u8;
  const char* examples = is_u8 ? reinterpret_cast<const char*>(dataset_.images.data<uint8_t>())
                               : reinterpret_cast<const char*>(dataset_.images.data<float>());
  const int64_t example_bytes = per_example * (is_u8 ? 1 : static_cast<int64_t>(sizeof(float)));
  for (int64_t i = 0; i < count; ++i) {
    int64_t index = order[static_cast<size_t>(first + i)];
    if (i + kPrefetchAhead < count) {
      const char* ahead = examples + order[static_cast<size_t>(first + i + kPrefetchAhead)] * example_bytes;
      for (int64_t byte = 0; byte < example_bytes; byte += 64) __builtin_prefetch(ahead + byte);
    }
    y[i] = labels[index];
    float* dst = x + i * per_example;
    if (is_u8) {
      const uint8_t* src = dataset_.images.data<uint8_t>() + index * per_example;
      for (int64_t k = 0; k < per_example; ++k) dst[k] = (src[k] * (1.0f / 255.0f) - shift) * scale;
    } else {
      const float* src = dataset_.images.data<float>() + index * per_example;
      for (int64_t k = 0; k < per_example; ++k) dst[k] = (src[k] - shift) * scale;
    }
  }
  return batch;
}

Batch DataLoader::delivered(Batch batch) const {
  if (!options_.device) return batch;
  return {batch.x.to(*options_.device), batch.y.to(*options_.device)};
}

void DataLoader::start_epoch() {
  stop_producer();
  order_ = sampler_->indices(dataset_.size(), next_epoch_++);
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
  producer_ = std::thread([this, batches] {
    run_at_idle_priority();
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
}

void DataLoader::stop_producer() {
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
