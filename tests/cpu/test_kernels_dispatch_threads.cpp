// The kernel table's dispatch and the CPU thread pool the kernels split their work over.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "duet/kernels/backend.h"
#include "duet/kernels/cpu/thread_pool.h"
#include "duet/kernels/kernels.h"

using namespace duet;
using namespace duet::kernels;
using Catch::Matchers::Contains;

TEST_CASE("dispatch names ops and reports a missing CUDA backend", "[kernels]") {
  CHECK(std::string(name(UnaryOp::sigmoid)) == "sigmoid");
  CHECK(std::string(name(BinaryOp::ge)) == "ge");
  CHECK(std::string(name(ReduceOp::logsumexp)) == "logsumexp");
  CHECK(&backend_for(duet::cpu(), "add") == &cpu_backend());
  CHECK(&backend_for(duet::cpu(1), "add") == &cpu_backend());  // one table for every logical CPU device
#ifndef DUET_HAS_CUDA
  REQUIRE_THROWS_WITH(backend_for(cuda_device(0), "add"), Contains("add on cuda:0: duet was built without CUDA"));
#endif
}

TEST_CASE("the thread pool covers a range once, runs nested loops inline, rethrows", "[kernels]") {
  const int saved = num_threads();
  set_num_threads(4);  // more threads than cores is fine for correctness
  CHECK(num_threads() == 4);
  const int64_t n = 100003;
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<int> nested_inline{0};
  cpu::parallel_for(n, 1000, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
    cpu::parallel_for(10000, 1, [&](int64_t b, int64_t e) {
      if (b == 0 && e == 10000) nested_inline++;
    });
  });
  bool once = true;
  for (auto& h : hits) once &= h.load() == 1;
  CHECK(once);
  CHECK(nested_inline.load() >= 2);  // one per chunk, each run inline
  REQUIRE_THROWS_WITH(cpu::parallel_for(n, 10,
                                        [](int64_t begin, int64_t) {
                                          if (begin > 0) DUET_FAIL("chunk failed");
                                        }),
                      Contains("chunk failed"));
  REQUIRE_THROWS(set_num_threads(0));
  set_num_threads(saved);
  CHECK(num_threads() == saved);
}

namespace {
// Counts its slices, up to `limit`, and the ones run by a thread other than `caller`.
class CountingWork final : public cpu::IdleWork {
 public:
  CountingWork(int limit, std::thread::id caller) : limit(limit), caller_(caller) {}
  bool run_slice() override {
    if (slices.fetch_add(1) >= limit.load()) {
      slices.fetch_sub(1);
      return false;
    }
    if (std::this_thread::get_id() != caller_) ++by_workers;
    return true;
  }
  std::atomic<int> limit, slices{0}, by_workers{0};

 private:
  const std::thread::id caller_;
};

// Short parallel loops, `loops` of them or until done() holds (within 10 s): the pool's worker
// spins between them.
template <class Done> bool run_loops(int loops, Done&& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::atomic<int64_t> sink{0};
  for (int i = 0; i < loops && !done() && std::chrono::steady_clock::now() < until; ++i) {
    cpu::parallel_for(2, 1, [&](int64_t begin, int64_t end) { sink += end - begin; });
  }
  return done();
}
}  // namespace

TEST_CASE("the pool's idle workers run offered work between loops, and withdrawn work no more", "[kernels][pool]") {
  const int saved = num_threads();
  set_num_threads(2);
  auto work = std::make_shared<CountingWork>(50, std::this_thread::get_id());
  cpu::offer_idle_work(work);
  CHECK(run_loops(1 << 30, [&] { return work->slices.load() == 50; }));
  CHECK(work->by_workers.load() == 50);  // the caller never runs idle work
  cpu::withdraw_idle_work(work.get());
  work->limit = 1000;  // there is more, but it is no longer offered
  run_loops(2000, [] { return false; });
  CHECK(work->slices.load() == 50);
  set_num_threads(saved);
}
