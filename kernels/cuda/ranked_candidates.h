// The candidates of an algorithm search, best first, and the one in use: the first that has not
// failed. cuDNN ranks its convolution algorithms by heuristics, but a ranked algorithm can still
// fail when it runs (not supported for this shape after all, no memory for its workspace). As
// PyTorch does (AlgoIterator::try_all in github.com/pytorch/pytorch, aten/src/ATen/native/cudnn/Conv_v7.cpp), the
// candidates are tried in rank order and the first that runs is kept for every later call. Plain C++ with no CUDA
// header, so that the CPU tests cover it (tests/cpu/test_ranked_candidates.cpp).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace duet::cuda {

enum class Attempt { ran, failed };

template <class Candidate> class RankedCandidates {
 public:
  explicit RankedCandidates(std::vector<Candidate> ranked) : ranked_(std::move(ranked)) {}

  // Calls attempt(candidate, rank) for the kept candidate and then, while it returns
  // Attempt::failed, for the next ones in rank order. The first that returns Attempt::ran is
  // kept and returned. When all fail, returns nullptr, and later calls try none (the caller's
  // fallback runs at once). An exception from `attempt` passes through; the candidates that
  // failed before it stay failed, and the one that threw is tried first next time.
  template <class F> const Candidate* run(F&& attempt) {
    for (; kept_ < ranked_.size(); ++kept_) {
      if (attempt(ranked_[kept_], kept_) == Attempt::ran) return &ranked_[kept_];
    }
    return nullptr;
  }

  // The rank of the candidate the next run() starts with (size() once all have failed).
  size_t kept() const { return kept_; }
  size_t size() const { return ranked_.size(); }

 private:
  std::vector<Candidate> ranked_;
  size_t kept_ = 0;
};

}  // namespace duet::cuda
