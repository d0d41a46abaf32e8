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
