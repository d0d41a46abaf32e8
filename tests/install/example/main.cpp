// A complete duet program: LeNet on Fashion-MNIST, written against the installed library.
// docs/writing-models.md walks through it. Usage: duet_example [max_batches]
#include <duet/duet.h>

#include <cstdlib>
#include <iostream>

using namespace duet;

// A model of your own: a module registers its layers, and forward() says how they connect.
class TinyNet : public nn::Cloneable<TinyNet> {
 public:
  TinyNet() {
    features_ = register_module("features", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)),
                                                           nn::ReLU(), nn::MaxPool2d(2)));
    classifier_ = register_module("classifier", nn::Linear(8 * 14 * 14, 10));
  }
  Tensor forward(const Tensor& x) override { return classifier_(features_(x).flatten(1)); }

 private:
  nn::Child<nn::Sequential> features_;
  nn::Child<nn::Linear> classifier_;
};

int main(int argc, char** argv) {
  int64_t max_batches = argc > 1 ? std::atoll(argv[1]) : 100;
  manual_seed(0);
  auto net = std::make_shared<TinyNet>();
  optim::SGD opt(net->parameters(), {.lr = 0.1, .momentum = 0.9});
  data::DataLoader train(data::FashionMNIST::train(), {.batch_size = 256, .shuffle = true, .seed = 0});

  int64_t step = 0;
  for (auto& [x, y] : train) {
    opt.zero_grad();
    Tensor loss = nn::functional::cross_entropy(net->forward(x), y);
    loss.backward();
    opt.step();
    if (++step % 10 == 0) std::cout << "step " << step << "  loss " << loss.item<float>() << "\n";
    if (step == max_batches) break;
  }
  return 0;
}
