// nn::Child, the typed handle register_module returns: it calls the child of the module that
// holds it, after a clone, a replicate, a plain copy and replace_child; and Module::name()'s
// default, the class name.
#include <catch2/catch.hpp>

#include "duet/duet.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {

// Neither class declares name(): the default is the class name.
class Block final : public nn::Cloneable<Block> {
 public:
  explicit Block(int64_t width) { fc_ = register_module("fc", nn::Linear(width, width)); }
  Tensor forward(const Tensor& x) override { return relu(fc_(x)); }

  nn::Child<nn::Linear> fc_;
};

// A handle of each kind: a holder's, a custom module's (in a vector), any module's.
class Net final : public nn::Cloneable<Net> {
 public:
  Net() {
    for (int i = 0; i < 2; ++i)
      blocks_.push_back(register_module("block" + std::to_string(i), std::make_shared<Block>(4)));
    act_ = register_module("act", nn::Tanh());
    head_ = register_module("head", nn::Linear(4, 3));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (const auto& block : blocks_) h = block(h);
    return head_(act_(h));
  }

  std::vector<nn::Child<Block>> blocks_;
  nn::Child<nn::Module> act_;
  nn::Child<nn::Linear> head_;
};

template <class T> class Templated final : public nn::Cloneable<Templated<T>> {
 public:
  Tensor forward(const Tensor& x) override { return x; }
};

const nn::Module* registered(const nn::Module& parent, const std::string& name) {
  for (const auto& [child_name, child] : parent.named_children()) {
    if (child_name == name) return child.get();
  }
  FAIL("no child " << name);
  return nullptr;
}

std::vector<std::vector<float>> values(const nn::Module& module) {
  std::vector<std::vector<float>> out;
  for (const auto& [name, t] : module.state_dict()) out.push_back(t.to(cpu()).to_vector<float>());
  return out;
}

}  // namespace

TEST_CASE("a handle calls the clone's child: the clone trains on cpu:1, the original is untouched",
          "[nn][module][handles]") {
  manual_seed(3);
  auto net = std::make_shared<Net>();
  Tensor x = rand({8, 4});
  Tensor target = rand({8, 3});
  const auto original_values = values(*net);
  const auto original_out = net->forward(x).to_vector<float>();

  auto copy = std::dynamic_pointer_cast<Net>(net->clone(cpu(1)));
  REQUIRE(copy);
  // Every handle of the copy, the vector's too, names the copy's own registered child.
  CHECK(&*copy->head_ == registered(*copy, "head"));
  CHECK(&*copy->act_ == registered(*copy, "act"));
  for (size_t i = 0; i < copy->blocks_.size(); ++i) {
    const nn::Module* block = registered(*copy, "block" + std::to_string(i));
    CHECK(&*copy->blocks_[i] == block);
    CHECK(&*copy->blocks_[i]->fc_ == registered(*block, "fc"));
    CHECK(&*copy->blocks_[i] != &*net->blocks_[i]);
  }
  CHECK(copy->head_->weight().device() == cpu(1));

  optim::SGD opt(copy->parameters(), {.lr = 0.5});
  Tensor x1 = x.to(cpu(1)), target1 = target.to(cpu(1));
  double first_loss = 0, last_loss = 0;
  for (int step = 0; step < 5; ++step) {
    opt.zero_grad();
    Tensor loss = nn::functional::mse_loss(copy->forward(x1), target1);
    CHECK(loss.device() == cpu(1));
    loss.backward();
    opt.step();
    (step == 0 ? first_loss : last_loss) = loss.item<double>();
  }
  CHECK(last_loss < first_loss);
  CHECK(values(*copy) != original_values);

  CHECK(values(*net) == original_values);
  for (const Tensor& p : net->parameters()) CHECK_FALSE(p.grad().defined());
  CHECK(net->forward(x).to_vector<float>() == original_out);
}

TEST_CASE("a replica's handles call the replica's children, so gradients reach the given tensors",
          "[nn][module][handles]") {
  manual_seed(4);
  auto net = std::make_shared<Net>();
  Tensor x = rand({5, 4});
  sum(net->forward(x)).backward();
  std::vector<Tensor> expected;
  for (const Tensor& p : net->parameters()) expected.push_back(p.grad());
  net->zero_grad();

  // As DataParallel does: the replica's parameters are differentiable copies of the master's.
  std::vector<Tensor> params;
  for (const Tensor& p : net->parameters()) params.push_back(p.to(cpu(1)));
  auto replica = std::dynamic_pointer_cast<Net>(net->replicate(params, {}));
  REQUIRE(replica);
  CHECK(&replica->blocks_[1]->fc_->weight().impl() == &params[2].impl());
  sum(replica->forward(x.to(cpu(1)))).backward();
  std::vector<Tensor> masters = net->parameters();
  for (size_t i = 0; i < masters.size(); ++i) {
    REQUIRE(masters[i].grad().defined());
    CHECK(masters[i].grad().to_vector<float>() == expected[i].to_vector<float>());
  }
}

TEST_CASE("a handle follows replace_child, and a typed one refuses a module of another class",
          "[nn][module][handles][errors]") {
  manual_seed(5);
  Net net;
  auto relu = nn::ReLU().ptr();
  net.replace_child("act", relu);
  CHECK(&*net.act_ == relu.get());

  nn::Linear other(4, 3);
  net.replace_child("head", other);
  CHECK(&*net.head_ == other.ptr().get());
  CHECK(net.forward(rand({2, 4})).sizes() == Shape{2, 3});

  net.replace_child("head", nn::Tanh());
  CHECK_THROWS_WITH(net.head_->weight(), Contains("Net: child 'head' is now Tanh (TanhImpl), not the LinearImpl") &&
                                             Contains("nn::Child<nn::Module>"));
  CHECK_THROWS_WITH(net.forward(rand({2, 4})), Contains("not the LinearImpl"));
}

TEST_CASE("a plain copy of a module holds its own handles", "[nn][module][handles]") {
  manual_seed(6);
  auto net = std::make_shared<Net>();
  auto twin = std::make_shared<Net>(*net);  // shallow: the same children, its own registry
  CHECK(&*twin->head_ == &*net->head_);
  nn::Linear other(4, 3);
  twin->replace_child("head", other);
  CHECK(&*twin->head_ == other.ptr().get());
  CHECK(&*net->head_ != other.ptr().get());
  CHECK(twin->forward(rand({2, 4})).sizes() == Shape{2, 3});
  // The copy is over: a copy of the original's handle keeps the original's child.
  nn::Child<nn::Linear> head = net->head_;
  CHECK(&*head == registered(*net, "head"));
  CHECK(&*head != other.ptr().get());
  net.reset();  // the twin's handles never pointed into it
  CHECK(twin->forward(rand({2, 4})).sizes() == Shape{2, 3});
}

TEST_CASE("a handle that register_module never bound says so", "[nn][module][handles][errors]") {
  nn::Child<nn::Linear> unbound;
  CHECK_FALSE(unbound);
  CHECK_THROWS_WITH(unbound->weight(), Contains("never bound"));
  CHECK_THROWS_WITH(unbound(rand({1, 4})), Contains("never bound"));
}

TEST_CASE("Module::name() defaults to the class name, without namespaces", "[nn][module]") {
  Net net;
  CHECK(net.name() == "Net");
  CHECK(Templated<nn::Linear>().name() == "Templated<duet::nn::Linear>");
  CHECK_THAT(net.str(), Contains("(block0): Block(\n") &&
                            Contains("(fc): Linear(in_features=4, out_features=4, bias=True)") &&
                            Contains("(act): Tanh()"));
}
