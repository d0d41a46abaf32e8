// The kernel table's dispatch and the CPU thread pool the kernels split their work over.
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
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
