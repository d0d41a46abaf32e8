// The kernel table's dispatch and the CPU thread pool the kernels split their work over.
#include <pthread.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "duet/core/cpu_affinity.h"
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

TEST_CASE("a pool handed to a thread runs that thread's loops, on workers pinned to its cpus", "[kernels][pool]") {
  const std::vector<int> cpus = duet::available_cores();
  REQUIRE(!cpus.empty());
  auto pool = std::make_shared<cpu::ThreadPool>(2, std::vector<int>{cpus.back()});
  CHECK(pool->size() == 2);
  cpu::use_thread_pool(pool);
  CHECK(cpu::pool_size() == 2);
  // Two chunks that wait for each other (for 10 s at most): the pool's one worker must take one.
  std::atomic<int> started{0};
  std::atomic<bool> worker_ran{false};
  std::vector<int> worker_cpus;
  const std::thread::id caller = std::this_thread::get_id();
  cpu::parallel_for(2, 1, [&](int64_t, int64_t) {
    started++;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    if (std::this_thread::get_id() != caller) {
      worker_cpus = duet::thread_cores(pthread_self());
      worker_ran = true;
    }
  });
  cpu::use_thread_pool(nullptr);
  CHECK(worker_ran.load());
  CHECK(worker_cpus == std::vector<int>{cpus.back()});
  CHECK(cpu::pool_size() == num_threads());  // back on the shared pool
  REQUIRE_THROWS_WITH(cpu::ThreadPool(0), Contains("at least 1 thread"));
}
