// PinnedCache (kernels/cuda/pinned_cache.h), the pinned allocator's cache of freed blocks, with a
// free function that stands in for cudaFreeHost: plain C++, tested here without a GPU. Emptying
// the cache used to free the blocks it had swapped out in a loop, so a throw lost every block after
// the one that threw (never freed, no longer cached: leaked) and the reserved bytes kept counting
// them.
#include <catch2/catch.hpp>

#include <cstddef>
#include <functional>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "duet/kernels/cuda/pinned_cache.h"

using duet::cuda::PinnedCache;

namespace {

struct FakeBlock {
  std::size_t size = 0;
};

using Cache = PinnedCache<FakeBlock>;

// What a free function did: the blocks it freed, in order, and the bytes they held.
struct Freer {
  std::vector<void*> freed;
  std::size_t bytes = 0;
  int calls = 0;
  int throw_on_call = 0;  // 1-based; 0: never throws

  void operator()(const Cache::Key&, void* ptr, FakeBlock& block) {
    if (++calls == throw_on_call) throw std::runtime_error("cudaFreeHost failed");
    freed.push_back(ptr);
    bytes += block.size;
  }
};

}  // namespace

TEST_CASE("emptying the pinned cache loses no block when one free throws", "[pinned_cache]") {
  Cache cache;
  char memory[4];  // four distinct addresses
  const std::set<void*> all = {&memory[0], &memory[1], &memory[2], &memory[3]};
  // Two bins on two CPU devices, so the blocks not yet reached span another bin.
  cache.put({0, 512}, &memory[0], {512});
  cache.put({0, 512}, &memory[1], {512});
  cache.put({0, 1024}, &memory[2], {1024});
  cache.put({1, 512}, &memory[3], {512});
  REQUIRE(cache.size() == 4);

  Freer failing;
  failing.throw_on_call = 2;
  REQUIRE_THROWS_WITH(cache.release(std::ref(failing)), "cudaFreeHost failed");
  REQUIRE(failing.freed.size() == 1);
  // The block whose free threw and the two not yet reached are still cached; the freed one is not.
  CHECK(cache.size() == 3);

  Freer second;
  cache.release(std::ref(second));
  CHECK(cache.size() == 0);
  // Every block freed exactly once over the two calls, and the bytes match the blocks.
  std::multiset<void*> freed(failing.freed.begin(), failing.freed.end());
  freed.insert(second.freed.begin(), second.freed.end());
  CHECK(freed.size() == 4);
  CHECK(std::set<void*>(freed.begin(), freed.end()) == all);
  CHECK(failing.bytes + second.bytes == 512 + 512 + 1024 + 512);
}

TEST_CASE("blocks put back after a failed free can be taken again from their own bin", "[pinned_cache]") {
  Cache cache;
  char memory[4];
  for (int i = 0; i < 4; ++i) cache.put({0, 512}, &memory[i], {512});
  Freer failing;
  failing.throw_on_call = 2;
  REQUIRE_THROWS(cache.release(std::ref(failing)));
  REQUIRE(failing.freed.size() == 1);

  std::set<void*> taken;
  const auto any = [](FakeBlock&) { return true; };
  while (auto entry = cache.take({0, 512}, any)) {
    CHECK(entry->second.size == 512);
    taken.insert(entry->first);
  }
  CHECK(taken.size() == 3);
  CHECK(taken.count(failing.freed[0]) == 0);  // the freed block is never handed out again
  CHECK_FALSE(cache.take({0, 1024}, any).has_value());
  CHECK_FALSE(cache.take({1, 512}, any).has_value());
}

TEST_CASE("the pinned cache hands out only a block its test accepts, from the requested bin", "[pinned_cache]") {
  Cache cache;
  char memory[3];
  cache.put({0, 512}, &memory[0], {512});
  cache.put({0, 512}, &memory[1], {512});
  cache.put({0, 2048}, &memory[2], {2048});
  // A block still read by a copy (here: the first) is passed over, not removed.
  auto entry = cache.take({0, 512}, [&](FakeBlock&) { return false; });
  CHECK_FALSE(entry.has_value());
  CHECK(cache.size() == 3);
  bool first = true;
  entry = cache.take({0, 512}, [&](FakeBlock&) { return !std::exchange(first, false); });
  REQUIRE(entry.has_value());
  CHECK(entry->first == &memory[1]);
  CHECK(cache.size() == 2);
}

TEST_CASE("out of pinned memory, the cache is freed for a retry, but never while a graph records", "[pinned_cache]") {
  using duet::cuda::allocate_or_release_and_retry;
  struct Attempts {
    std::vector<bool> results;  // what each allocate() returns, in turn
    int allocations = 0;
    int releases = 0;
  } a;
  auto allocate = [&a] { return a.results.at(static_cast<std::size_t>(a.allocations++)); };
  auto release = [&a] { ++a.releases; };

  SECTION("memory at the first try: nothing freed") {
    a.results = {true};
    CHECK(allocate_or_release_and_retry(allocate, release, [] { return false; }));
    CHECK(a.allocations == 1);
    CHECK(a.releases == 0);
  }
  SECTION("out of memory, no graph recording: the cache goes back, and the retry gets it") {
    a.results = {false, true};
    CHECK(allocate_or_release_and_retry(allocate, release, [] { return false; }));
    CHECK(a.allocations == 2);
    CHECK(a.releases == 1);
  }
  SECTION("out of memory while a graph records: nothing freed, no retry, the caller reports it") {
    a.results = {false, true};
    CHECK_FALSE(allocate_or_release_and_retry(allocate, release, [] { return true; }));
    CHECK(a.allocations == 1);
    CHECK(a.releases == 0);
  }
}
