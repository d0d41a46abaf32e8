// The engine's device threads: each node runs on its device's thread (the caller for the
// first root's device, a worker for every other), branches on different devices run
// concurrently, errors in a worker reach the caller, and single-device graphs stay on the
// calling thread.
#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "duet/autograd/function.h"
#include "duet/duet.h"

using namespace duet;
using autograd::Node;
using autograd::TensorList;
using Catch::Matchers::Contains;

namespace {

Tensor leaf(std::vector<float> values) {
  Tensor t = from_vector(values, {static_cast<int64_t>(values.size())});
  t.requires_grad_();
  return t;
}

// The threads that ran backward code, by label; hooks write it from several threads.
class ThreadLog {
 public:
  void record(const std::string& label) {
    std::lock_guard lock(mutex_);
    ids_[label] = std::this_thread::get_id();
  }
  std::thread::id operator[](const std::string& label) {
    std::lock_guard lock(mutex_);
    REQUIRE(ids_.count(label) == 1);
    return ids_[label];
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::thread::id> ids_;
};

// A hook that logs its thread and leaves the gradient as it is.
GradHook logging(ThreadLog& log, std::string label) {
  return [&log, label](const Tensor&) {
    log.record(label);
    return Tensor();
  };
}

// Waits until `parties` threads have arrived, or throws after a timeout: two branches can
// only both pass it if they run at the same time.
class Rendezvous {
 public:
  explicit Rendezvous(int parties) : waiting_(parties) {}
  void arrive() {
    std::unique_lock lock(mutex_);
    if (--waiting_ == 0) all_here_.notify_all();
    DUET_CHECK(all_here_.wait_for(lock, std::chrono::seconds(20), [this] { return waiting_ <= 0; }),
               "rendezvous: the other branch never ran concurrently");
  }

 private:
  std::mutex mutex_;
  std::condition_variable all_here_;
  int waiting_;
};

// An identity op whose backward node logs the thread and grad mode it ran with.
class ProbeBackward final : public Node {
 public:
  ProbeBackward(ThreadLog& log, bool& grad_mode) : log_(log), grad_mode_(grad_mode) {}
  TensorList apply(TensorList&& grads) override {
    log_.record("probe");
    grad_mode_ = GradMode::is_enabled();
    return {grads.at(0)};
  }
  std::string name() const override { return "ProbeBackward"; }

 private:
  ThreadLog& log_;
  bool& grad_mode_;
};

Tensor probe(const Tensor& x, ThreadLog& log, bool& grad_mode) {
  Tensor out = x.detach();
  autograd::record(std::make_shared<ProbeBackward>(log, grad_mode), {x}, {out});
  return out;
}

}  // namespace

TEST_CASE("branches on cpu:1 and cpu:2 run on their own threads with correct gradients", "[autograd]") {
  ThreadLog log;
  bool probe_grad_mode = true;
  Tensor x = leaf({1, 2, 3});
  x.register_hook(logging(log, "x"));
  Tensor a = x.to(cpu(1));
  a.register_hook(logging(log, "cpu:1"));
  Tensor b = probe(x.to(cpu(2)), log, probe_grad_mode);
  CHECK(b.grad_fn()->device() == cpu(2));  // record() takes the device from the output
  b.register_hook(logging(log, "cpu:2"));
  Tensor loss = sum(a * a).to(cpu(0)) + sum(b * 3.0).to(cpu(0));  // d/dx = 2x + 3
  loss.backward();

  CHECK(x.grad().to_vector<float>() == std::vector<float>{5, 7, 9});
  const std::thread::id caller = std::this_thread::get_id();
  CHECK(log["x"] == caller);  // the leaf lives on cpu:0, the root's device
  CHECK(log["cpu:1"] != caller);
  CHECK(log["cpu:2"] != caller);
  CHECK(log["cpu:1"] != log["cpu:2"]);
  CHECK(log["probe"] == log["cpu:2"]);
  CHECK_FALSE(probe_grad_mode);  // workers run backward with grad mode off, too
}

TEST_CASE("the same device's worker runs every backward of that device", "[autograd]") {
  ThreadLog first, second;
  for (ThreadLog* log : {&first, &second}) {
    Tensor x = leaf({1, 2});
    Tensor a = x.to(cpu(3));
    a.register_hook(logging(*log, "cpu:3"));
    sum(a).to(cpu(0)).backward();
  }
  CHECK(first["cpu:3"] == second["cpu:3"]);  // persistent, not a thread per call
}

TEST_CASE("a graph on one device never leaves the calling thread", "[autograd]") {
  for (Device device : {cpu(0), cpu(2)}) {
    ThreadLog log;
    Tensor x = leaf({1, 2}).to(device).detach();
    x.requires_grad_();
    x.register_hook(logging(log, "leaf"));
    Tensor y = x * x;
    y.register_hook(logging(log, "y"));
    sum(y + x).backward();
    CHECK(log["leaf"] == std::this_thread::get_id());
    CHECK(log["y"] == std::this_thread::get_id());
    CHECK(x.grad().to_vector<float>() == std::vector<float>{3, 5});
  }
}

TEST_CASE("replicas on different devices run backward concurrently", "[autograd]") {
  Rendezvous both(2);
  Tensor x = leaf({1, 2});
  std::vector<Tensor> terms;
  for (int d : {1, 2}) {
    Tensor replica = x.to(cpu(d));
    replica.register_hook([&both](const Tensor&) {
      both.arrive();  // throws unless the other device's hook runs at the same time
      return Tensor();
    });
    terms.push_back(sum(replica * 2.0).to(cpu(0)));
  }
  (terms[0] + terms[1]).backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{4, 4});
}

GradHook throwing(const char* message) {
  return [message](const Tensor&) -> Tensor { throw Error(message); };
}

TEST_CASE("an error in a worker reaches the caller and abandons the graph", "[autograd][errors]") {
  Tensor x = leaf({1, 2});
  Tensor a = x.to(cpu(1));
  a.register_hook(throwing("boom on cpu:1"));
  for (int round = 0; round < 20; ++round) {  // repeated, for TSan: the error crosses threads
    Tensor loss = sum(a).to(cpu(0)) + sum(x.to(cpu(2))).to(cpu(0));
    REQUIRE_THROWS_WITH(loss.backward(), Contains("boom on cpu:1"));
  }
  CHECK_FALSE(x.grad().defined());  // x's accumulator needed cpu:1's branch: it never ran

  // Both branches throw: one error (the first) comes out, and the engine still works after.
  Tensor c = x.to(cpu(2));
  c.register_hook(throwing("boom on cpu:2"));
  REQUIRE_THROWS_WITH((sum(a).to(cpu(0)) + sum(c).to(cpu(0))).backward(), Contains("boom on cpu:"));
  sum(x.to(cpu(1)) * 2.0).to(cpu(0)).backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{2, 2});
}

TEST_CASE("an error on the caller's device abandons the workers' share too", "[autograd][errors]") {
  Tensor x = leaf({1, 2});
  Tensor here = x * 1.0;
  here.register_hook(throwing("boom on cpu:0"));
  Tensor loss = sum(here) + sum(x.to(cpu(1)) * 3.0).to(cpu(0));
  REQUIRE_THROWS_WITH(loss.backward(), Contains("boom on cpu:0"));
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("retain_graph works across devices", "[autograd]") {
  Tensor x = leaf({1, 2});
  Tensor y = sum(x.to(cpu(1)) * x.to(cpu(1))).to(cpu(0)) + sum(x.to(cpu(2))).to(cpu(0));
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{6, 10});  // 2 * (2x + 1)
  REQUIRE_THROWS_WITH(y.backward(), Contains("a second time"));
}
