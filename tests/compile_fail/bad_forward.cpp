// Modules whose forward nn::Module cannot call: each line marked "bad:" must stop the build
// with nn::Cloneable's one sentence and nothing else, and the modules below it, whose forward
// is right, must compile (ctest forward_signature_message, expect_compile_error.cmake).
#include <duet/nn/module.h>

#include <memory>
#include <utility>

using duet::Tensor;
namespace nn = duet::nn;

class ByValue : public nn::Cloneable<ByValue> {  // bad: the tensor by value
 public:
  Tensor forward(Tensor x) { return x; }
};

class TwoInputs : public nn::Cloneable<TwoInputs> {  // bad: another parameter list
 public:
  Tensor forward(const Tensor& x, const Tensor& y) { return y.defined() ? y : x; }
};

class ReturnsPair : public nn::Cloneable<ReturnsPair> {  // bad: another result, another parameter
 public:
  std::pair<Tensor, Tensor> forward(Tensor& x) { return {x, x}; }
};

class NoForward : public nn::Cloneable<NoForward> {};  // bad: none at all

// Right: overloads that include the override, a noexcept one, one a base template declares.
class Overloaded : public nn::Cloneable<Overloaded> {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  Tensor forward(const Tensor& x, const Tensor&) { return x; }
};

class NoThrow : public nn::Cloneable<NoThrow> {
 public:
  Tensor forward(const Tensor& x) noexcept override { return x; }
};

template <class Self> class Identity : public nn::Cloneable<Self> {
 public:
  Tensor forward(const Tensor& x) override { return x; }
};
class FromBase : public Identity<FromBase> {};

int main() {
  auto modules = {std::shared_ptr<nn::Module>(std::make_shared<ByValue>()),
                  std::shared_ptr<nn::Module>(std::make_shared<TwoInputs>()),
                  std::shared_ptr<nn::Module>(std::make_shared<ReturnsPair>()),
                  std::shared_ptr<nn::Module>(std::make_shared<NoForward>()),
                  std::shared_ptr<nn::Module>(std::make_shared<Overloaded>()),
                  std::shared_ptr<nn::Module>(std::make_shared<NoThrow>()),
                  std::shared_ptr<nn::Module>(std::make_shared<FromBase>())};
  return static_cast<int>(modules.size());
}
