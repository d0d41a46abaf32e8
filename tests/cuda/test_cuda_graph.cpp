// GraphedSingleDevice on cuda:0: the step recorded as a CUDA graph and replayed trains to the
// same parameters and BatchNorm statistics as eager SingleDevice steps, with convolutions in
// cuDNN and in im2col (the capture-safe alternative, DUET_CONV_IM2COL=1), batches of another
// shape run eagerly in between, a new learning rate records again, and what a graph cannot
// replay (random numbers, bad labels, a call that breaks the recording) is refused with an error
// that names it.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "duet/duet.h"
#include "duet/kernels/cuda/graph.h"
#include "duet/kernels/cuda/runtime.h"
#include "strategy_fixtures.h"

using namespace duet;
using namespace duet::test;
using Catch::Matchers::Contains;

namespace {

constexpr double kTolerance = 1e-5;  // relative; the same kernels run, but cuDNN may pick others

std::vector<data::Batch> batches(const std::vector<int64_t>& rows) {
  std::vector<data::Batch> out;
  for (size_t i = 0; i < rows.size(); ++i) out.push_back(random_batch(rows[i], 100 + i));
  return out;
}

Params buffers_of(nn::Module& model) {
  Params out;
  for (const auto& [name, t] : model.named_buffers()) out.emplace_back(name, t.to(DType::f64).to_vector<double>());
  return out;
}

// DUET_CONV_IM2COL=1 for the scope's lifetime (conv2d reads it at every call), when asked.
class ScopedIm2col {
 public:
  explicit ScopedIm2col(bool on) : on_(on) {
    if (on_) setenv("DUET_CONV_IM2COL", "1", 1);
  }
  ~ScopedIm2col() {
    if (on_) unsetenv("DUET_CONV_IM2COL");
  }
  ScopedIm2col(const ScopedIm2col&) = delete;
  ScopedIm2col& operator=(const ScopedIm2col&) = delete;

 private:
  bool on_;
};

struct Runs {
  parallel::SingleDevice eager;
  parallel::GraphedSingleDevice graphed;
};

Runs both(const std::string& model) {
  auto a = fresh(model, cuda_device(0)), b = fresh(model, cuda_device(0));
  return {parallel::SingleDevice(a, sgd(a->parameters()), cuda_device(0)),
          parallel::GraphedSingleDevice(b, sgd(b->parameters()), cuda_device(0), parallel::LossReduction::mean,
                                        /*warmup_steps=*/2)};
}

}  // namespace

TEST_CASE("a step replayed from a CUDA graph trains like eager steps", "[cuda]") {
  const std::string model = GENERATE(as<std::string>{}, "lenet-relu", "resnet18");
  // If recording cuDNN's convolutions fails, the im2col run says whether the alternative works.
  const bool im2col = GENERATE(false, true);
  INFO(model << (im2col ? ", convolutions through im2col" : ", convolutions through cuDNN"));
  const ScopedIm2col conv_path(im2col);
  auto [eager, graphed] = both(model);
  for (const data::Batch& batch : batches({16, 16, 16, 16, 16, 16})) {
    const parallel::StepResult expected = eager.train_step(batch), actual = graphed.train_step(batch);
    CHECK(actual.loss == Approx(expected.loss).epsilon(kTolerance));
    CHECK(actual.correct == expected.correct);
    CHECK(actual.count == expected.count);
  }
  CHECK(graphed.recordings() == 1);
  CHECK(graphed.replays() == 4);  // 2 eager warm-up steps, then 4 from the graph
  CHECK(max_relative_diff(trained(graphed, {}), trained(eager, {})) < kTolerance);
  CHECK(max_relative_diff(buffers_of(graphed.model()), buffers_of(eager.model())) < kTolerance);
  // The parameters' .grad are the graph's last gradients.
  for (const Tensor& p : graphed.optimizer().params()) CHECK(p.grad().defined());
  CHECK(graphed.optimizer().steps() == 6);  // "step" counts the replays, and so does each parameter's count
  for (size_t i = 0; i < graphed.optimizer().params().size(); ++i) CHECK(graphed.optimizer().updates(i) == 6);
}

TEST_CASE("a replayed step trains a loss_fn of one's own on f32 targets like eager steps, set_lr included", "[cuda]") {
  const parallel::LossFn mse = [](const Tensor& out, const Tensor& y) { return nn::functional::mse_loss(out, y); };
  auto a = fresh("mlp", cuda_device(0)), b = fresh("mlp", cuda_device(0));
  parallel::SingleDevice eager(a, sgd(a->parameters()), cuda_device(0), parallel::LossReduction::mean, mse);
  parallel::GraphedSingleDevice graphed(b, sgd(b->parameters()), cuda_device(0), parallel::LossReduction::mean,
                                        /*warmup_steps=*/2, mse);
  std::vector<data::Batch> data = batches({16, 16, 16, 16, 16, 16});
  for (size_t i = 0; i < data.size(); ++i) {
    data[i].y = rand({16, 10});  // regression targets, one per output
    if (i == 4) {
      eager.set_lr(0.05);
      graphed.set_lr(0.05);
    }
    const parallel::StepResult expected = eager.train_step(data[i]), actual = graphed.train_step(data[i]);
    CHECK(actual.loss == Approx(expected.loss).epsilon(kTolerance));
    CHECK_FALSE(actual.correct.has_value());  // f32 targets: nothing to count
    CHECK_FALSE(expected.correct.has_value());
  }
  CHECK(graphed.recordings() == 2);  // the new lr recorded the step again
  CHECK(max_relative_diff(trained(graphed, {}), trained(eager, {})) < kTolerance);
}

TEST_CASE("a CUDA graph lets batches of another shape train eagerly and records again for a new lr", "[cuda]") {
  auto [eager, graphed] = both("lenet-relu");
  const std::vector<data::Batch> data = batches({16, 16, 16, 16, 8, 16, 16, 16});
  for (size_t i = 0; i < data.size(); ++i) {
    if (i == 6) {
      eager.optimizer().set_lr(0.05);
      graphed.optimizer().set_lr(0.05);
    }
    const parallel::StepResult expected = eager.train_step(data[i]), actual = graphed.train_step(data[i]);
    CHECK(actual.loss == Approx(expected.loss).epsilon(kTolerance));
  }
  // Steps 3 and 4 replay; 5 (8 rows) is eager; 6 replays; 7 records again at lr 0.05, 8 replays.
  CHECK(graphed.replays() == 5);
  CHECK(graphed.recordings() == 2);
  CHECK(max_relative_diff(trained(graphed, {}), trained(eager, {})) < kTolerance);
}

TEST_CASE("a CUDA graph refuses dropout and out-of-range labels, and the device works afterwards", "[cuda]") {
  manual_seed(1);
  std::shared_ptr<nn::Module> model(nn::Sequential(nn::Flatten(), nn::Linear(28 * 28, 10), nn::Dropout(0.5)));
  model->to(cuda_device(0));
  parallel::GraphedSingleDevice graphed(model, sgd(model->parameters()), cuda_device(0), parallel::LossReduction::mean,
                                        /*warmup_steps=*/1);
  const data::Batch batch = random_batch(8, 5);
  graphed.train_step(batch);  // eager: dropout is fine there
  CHECK_THROWS_WITH(graphed.train_step(batch), Contains("random numbers cannot be recorded in a CUDA graph"));

  auto [eager, plain] = both("lenet-relu");
  for (int i = 0; i < 3; ++i) plain.train_step(batch);
  data::Batch bad = batch;
  bad.y = batch.y.clone();
  bad.y.data<int64_t>()[3] = 10;
  CHECK_THROWS_WITH(plain.train_step(bad), Contains("target[3] = 10 is out of range for 10 classes"));
  CHECK_NOTHROW(plain.train_step(batch));
  // Eagerly the device's own check reports it, with the same message, when the step reads its loss.
  CHECK_THROWS_WITH(eager.train_step(bad), Contains("target[3] = 10 is out of range for 10 classes"));
  CHECK_NOTHROW(eager.train_step(batch));
}

TEST_CASE("a call that breaks a CUDA graph's recording is named, with the remedy", "[cuda]") {
  const Device gpu = cuda_device(0);
  const Tensor x = ones({4}, {.device = gpu});
  cuda::CapturedWork work(gpu);
  // Waiting for the device inside a recording is what breaks it; check_recording must say so,
  // naming the call it is given and the alternative.
  auto waits = [&] {
    Tensor y = x * 2.0;
    try {
      cuda::synchronize(gpu);
    } catch (const Error&) {
      // CUDA refuses the wait and invalidates the capture; the check below names the culprit.
    }
    cuda::check_recording(gpu, "the test's waiting call", "", "use the other path");
  };
  CHECK_THROWS_WITH(work.capture(waits), Contains("the test's waiting call while recording a CUDA graph on cuda:0") &&
                                             Contains("use the other path"));
  // Outside a recording it does nothing, and the device works after the failed one.
  CHECK_NOTHROW(cuda::check_recording(gpu, "a call", "", "a remedy"));
  CHECK(sum(x * 3.0).item<float>() == 12.0f);
}

// A DataLoader with pin_memory and device = cuda:0 sends each batch from its own thread, which
// may be while the step is recorded. Its copy must not land in the graph (then it would not run
// when issued, run again at every replay from a pinned block reused since, and leave an event
// the next pinned allocation cannot query): it waits for the recording to end (graph.h,
// outside_recording). Several epochs, so that prefetched copies overlap the recordings.
TEST_CASE("a pinned DataLoader on cuda:0 feeding a CUDA graph trains like eager steps", "[cuda]") {
  auto [eager, graphed] = both("lenet-relu");
  const data::Batch all = random_batch(128, 77);
  const data::TensorDataset dataset{all.x, all.y};
  data::DataLoaderOptions options;
  options.batch_size = 16;
  options.prefetch = 2;
  options.pin_memory = true;
  options.device = cuda_device(0);
  data::DataLoader loader(dataset, options);
  int steps = 0;
  for (int epoch = 0; epoch < 3; ++epoch) {
    loader.set_epoch(epoch);
    for (const data::Batch& batch : loader) {
      REQUIRE(batch.x.device() == cuda_device(0));
      const parallel::StepResult expected = eager.train_step(batch), actual = graphed.train_step(batch);
      CAPTURE(epoch, steps);
      CHECK(actual.loss == Approx(expected.loss).epsilon(kTolerance));
      CHECK(actual.correct == expected.correct);
      ++steps;
    }
  }
  CHECK(graphed.recordings() == 1);
  CHECK(graphed.replays() == steps - 2);
  CHECK(max_relative_diff(trained(graphed, {}), trained(eager, {})) < kTolerance);
}
