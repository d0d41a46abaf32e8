// RankedCandidates (kernels/cuda/ranked_candidates.h), the rule by which conv2d on CUDA picks
// among cuDNN's ranked algorithms: plain C++, so it is tested here, without a GPU.
#include <catch2/catch.hpp>

#include <set>
#include <stdexcept>
#include <vector>

#include "duet/kernels/cuda/ranked_candidates.h"

using duet::cuda::Attempt;
using duet::cuda::RankedCandidates;

namespace {

// Tries candidates, failing those in `broken`, and records which it tried.
struct Trial {
  std::set<int> broken;
  std::vector<int> tried;
  Attempt operator()(const int& candidate, size_t) {
    tried.push_back(candidate);
    return broken.count(candidate) ? Attempt::failed : Attempt::ran;
  }
};

}  // namespace

TEST_CASE("RankedCandidates keeps the first candidate that runs and tries it first from then on", "[cudnn_choice]") {
  RankedCandidates<int> ranked({10, 11, 12});
  Trial first{{10}};
  const int* chosen = ranked.run(first);
  REQUIRE(chosen != nullptr);
  CHECK(*chosen == 11);
  CHECK(first.tried == std::vector<int>{10, 11});
  CHECK(ranked.kept() == 1);

  Trial again{{}};
  CHECK(*ranked.run(again) == 11);
  CHECK(again.tried == std::vector<int>{11});  // the failed one is not tried again
}

TEST_CASE("RankedCandidates gives up, for good, when every candidate fails", "[cudnn_choice]") {
  RankedCandidates<int> ranked({1, 2});
  Trial all_broken{{1, 2}};
  CHECK(ranked.run(all_broken) == nullptr);
  CHECK(all_broken.tried == std::vector<int>{1, 2});
  CHECK(ranked.kept() == ranked.size());
  Trial later{{}};
  CHECK(ranked.run(later) == nullptr);
  CHECK(later.tried.empty());  // the caller's fallback runs at once

  RankedCandidates<int> none({});
  Trial nothing{{}};
  CHECK(none.run(nothing) == nullptr);
  CHECK(nothing.tried.empty());
}

TEST_CASE("RankedCandidates lets an exception through and retries that candidate next time", "[cudnn_choice]") {
  RankedCandidates<int> ranked({1, 2, 3});
  std::vector<int> tried;
  auto throwing_at_2 = [&](const int& c, size_t rank) {
    tried.push_back(c);
    CHECK(rank == static_cast<size_t>(c - 1));
    if (c == 2) throw std::runtime_error("recording broke");
    return Attempt::failed;
  };
  CHECK_THROWS_WITH(ranked.run(throwing_at_2), "recording broke");
  CHECK(tried == std::vector<int>{1, 2});
  CHECK(ranked.kept() == 1);  // 1 failed for good; 2 threw, so it was neither kept nor failed
  Trial next{{}};
  CHECK(*ranked.run(next) == 2);
  CHECK(next.tried == std::vector<int>{2});
}

TEST_CASE("RankedCandidates does not remember a skipped candidate (no memory for its workspace now)",
          "[cudnn_choice]") {
  RankedCandidates<int> ranked({1, 2, 3});
  std::vector<int> tried;
  auto short_of_memory_for_1 = [&](const int& c, size_t) {
    tried.push_back(c);
    return c == 1 ? Attempt::skipped : Attempt::ran;
  };
  CHECK(*ranked.run(short_of_memory_for_1) == 2);
  CHECK(ranked.kept() == 0);  // 1 is still the best once memory is back
  Trial memory_back{{}};
  CHECK(*ranked.run(memory_back) == 1);
  CHECK(memory_back.tried == std::vector<int>{1});

  // Skipped and failed mixed: the failed one is dropped, the skipped one stays first.
  RankedCandidates<int> mixed({1, 2, 3});
  tried.clear();
  auto skip_1_fail_2_3 = [&](const int& c, size_t) {
    tried.push_back(c);
    return c == 1 ? Attempt::skipped : Attempt::failed;
  };
  CHECK(mixed.run(skip_1_fail_2_3) == nullptr);
  CHECK(tried == std::vector<int>{1, 2, 3});
  CHECK(mixed.kept() == 0);
  Trial later{{}};
  CHECK(*mixed.run(later) == 1);
  Trial one_broken{{1}};
  CHECK(mixed.run(one_broken) == nullptr);
  CHECK(one_broken.tried == std::vector<int>{1});  // 2 and 3 stay failed
  CHECK(mixed.kept() == mixed.size());
}
