// The candidates of an algorithm search, best first, and the one in use: the first that has not
// failed. cuDNN ranks its convolution algorithms by heuristics, but a ranked algorithm can still
// fail when it runs (not supported for this shape after all, no memory for its workspace now). As
// PyTorch does (AlgoIterator::try_all in github.com/pytorch/pytorch, aten/src/ATen/native/cudnn/Conv_v7.cpp), the
// candidates are tried in rank order and the first that runs is kept for every later call. Plain C++ with no CUDA
// header, so that the CPU tests cover it (tests/cpu/test_ranked_candidates.cpp).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace duet::cuda {

// ran: the candidate did its work. failed: it never will for this key (cuDNN does not support
// it): dropped for good. skipped: not this time (no memory for its workspace): the next
// candidate is tried for this call only, and the skipped one stays first for the next call, so
// a transient out-of-memory is not remembered for the rest of the process.
enum class Attempt { ran, failed, skipped };

template <class Candidate> class RankedCandidates {
 public:
  explicit RankedCandidates(std::vector<Candidate> ranked) : ranked_(std::move(ranked)) {}

  // Calls attempt(candidate, rank) for the kept candidate and then, while it returns
  // Attempt::failed or Attempt::skipped, for the next ones that have not failed, in rank order,
  // and returns the first that returns Attempt::ran. The kept candidate is the first that has not
  // failed. When none ran, returns nullptr; once all have failed, later calls try none (the
  // caller's fallback runs at once). An exception from `attempt` passes through; the candidates
  // that failed before it stay failed, and the one that threw is tried first next time.
  template <class F> const Candidate* run(F&& attempt) {
    for (size_t rank = kept_; rank < ranked_.size(); ++rank) {
      if (failed_[rank]) continue;
      const Attempt outcome = attempt(ranked_[rank], rank);
      if (outcome == Attempt::ran) return &ranked_[rank];
      if (outcome != Attempt::failed) continue;
      failed_[rank] = true;
      while (kept_ < ranked_.size() && failed_[kept_]) ++kept_;
    }
    return nullptr;
  }

  // The rank of the candidate the next run() starts with (size() once all have failed).
  size_t kept() const { return kept_; }
  size_t size() const { return ranked_.size(); }

 private:
  std::vector<Candidate> ranked_;
  std::vector<bool> failed_ = std::vector<bool>(ranked_.size(), false);
  size_t kept_ = 0;
};

}  // namespace duet::cuda
