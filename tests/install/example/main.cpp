// A complete duet program, written against the installed library: a model of its own, trained
// on Fashion-MNIST for an epoch, evaluated, saved, and loaded into a fresh model that must score
// the same; then trained under dp and ddp on two devices, and the strategies compared by an
// Experiment, whose per-step check must hold. docs/writing-models.md shows it in parts: each block between "// doc:
// NAME" and
// "// end doc" is a code block of the page (ctest doc_matches_example holds them equal).
//
// Usage: duet_example [train_images [test_images [checkpoint]]]
// Without arguments it trains on all 60,000 images and evaluates on all 10,000; the install test
// takes the first few thousand of each.
#include <duet/duet.h>

#include <cstdlib>
#include <iostream>
#include <string>

using namespace duet;

// doc: model
class TinyNet : public nn::Cloneable<TinyNet> {
 public:
  TinyNet() {
    features_ = register_module(
        "features", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2)));
    classifier_ = register_module("classifier", nn::Linear(8 * 14 * 14, 10));
  }
  Tensor forward(const Tensor& x) override { return classifier_(features_(x).flatten(1)); }

 private:
  nn::Child<nn::Sequential> features_;
  nn::Child<nn::Linear> classifier_;
};
// end doc

// doc: accuracy
// The fraction of `data` the model classifies correctly. eval() switches off what only training
// does (dropout; BatchNorm then uses its running statistics), and NoGradGuard records no graph.
double accuracy(nn::Module& net, const data::TensorDataset& data) {
  NoGradGuard no_grad;
  net.eval();
  int64_t correct = 0;
  for (auto& [x, y] : data::DataLoader(data, {.batch_size = 1000})) {
    correct += net.forward(x).argmax(1).eq(y).sum().item<int64_t>();
  }
  net.train();
  return static_cast<double>(correct) / static_cast<double>(data.size());
}
// end doc

// The first `n` examples of `set` (all of them when n is 0 or more than it has).
data::TensorDataset first(const data::TensorDataset& set, int64_t n) {
  if (n <= 0 || n >= set.size()) return set;
  return {set.images.narrow(0, 0, n), set.labels.narrow(0, 0, n)};
}

int main(int argc, char** argv) {
  const int64_t train_images = argc > 1 ? std::atoll(argv[1]) : 0;
  const int64_t test_images = argc > 2 ? std::atoll(argv[2]) : 0;
  const std::string path = argc > 3 ? argv[3] : "tinynet.safetensors";

  // doc: data
  data::TensorDataset train_set = data::FashionMNIST::train();
  data::TensorDataset test_set = data::FashionMNIST::test();
  // end doc
  train_set = first(train_set, train_images);
  test_set = first(test_set, test_images);

  // doc: train
  manual_seed(0);  // init, dropout
  auto net = std::make_shared<TinyNet>();
  std::cout << *net << "\n";  // the module tree, as PyTorch's print(net)
  optim::SGD opt(net->parameters(), {.lr = 0.1, .momentum = 0.9});
  data::DataLoader train(train_set, {.batch_size = 256, .shuffle = true, .seed = 0});
  for (auto& [x, y] : train) {  // one epoch; x: f32 [256, 1, 28, 28] in [0, 1], y: i64 [256]
    opt.zero_grad();
    Tensor loss = nn::functional::cross_entropy(net->forward(x), y);
    loss.backward();
    opt.step();
  }
  const double trained = accuracy(*net, test_set);
  std::cout << "test accuracy " << trained << "\n";
  // end doc

  // doc: save
  optim::save_checkpoint(path, *net, opt, default_generator(), {.epochs_done = 1});
  // To train on: the model, the optimizer's state and the generator, as they were saved.
  optim::CheckpointInfo info = optim::load_checkpoint(path, *net, opt, default_generator());
  // To evaluate: the model alone, into a fresh one.
  auto restored = std::make_shared<TinyNet>();
  optim::read_checkpoint(path).restore_model(*restored);
  const double reloaded = accuracy(*restored, test_set);
  std::cout << "reloaded accuracy " << reloaded << " after " << info.epochs_done << " epoch\n";
  // end doc

  if (reloaded != trained) {
    std::cerr << "the reloaded model scores " << reloaded << ", the trained one " << trained << "\n";
    return 1;
  }

  // doc: strategies
  // How a strategy makes an optimizer: once per replica that steps (dp has one, ddp one per device).
  parallel::OptimizerFactory make_sgd = [](std::vector<Tensor> params) {
    return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
  };
  for (const parallel::StrategyKind strategy : {parallel::StrategyKind::dp, parallel::StrategyKind::ddp}) {
    manual_seed(0);  // the same initial weights as above
    auto replicated = std::make_shared<TinyNet>();
    auto trainer = parallel::make_strategy(strategy, replicated, make_sgd, {cpu(0), cpu(1)});
    train.set_epoch(0);  // the batches of the loop above, in the same order
    for (const data::Batch& batch : train) trainer->train_step(batch);  // one epoch
    std::cout << strategy << " test accuracy " << accuracy(trainer->model(), test_set) << "\n";
  }
  // end doc

  // doc: experiment
  parallel::ExperimentConfig config{.batch_size = 256, .steps = 8, .warmup = 1, .make_optimizer = make_sgd};
  config.make_model = [] { return std::make_shared<TinyNet>(); };
  parallel::Experiment experiment(config, train_set);
  for (const auto& [strategy, devices] : {std::pair{parallel::StrategyKind::single, 1},
                                          {parallel::StrategyKind::dp, 2},
                                          {parallel::StrategyKind::ddp, 2}}) {
    const parallel::RunMeasurement m = experiment.run({strategy, devices});
    std::cout << strategy << ": " << m.images_per_second << " images/s, worst step " << m.max_check_ulps.value_or(-1)
              << " ulps from single-device training's\n";
    if (!m.max_check_ulps || *m.max_check_ulps > 8) return 1;
  }
  // end doc
  return 0;
}
