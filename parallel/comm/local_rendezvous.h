// LocalRendezvous: the state that the N in-process ranks of one local group share, and the
// only way their comm threads exchange data.
//
// A rank exchanges data by posting a tensor (its own memory, on its own device) for a number of
// readers; each reader waits for the post, copies it (or the part of it meant for that reader)
// onto its own device with kernels::copy, and marks it read. A rank has one post out at a time: posting again, or
// finishing the collective, waits until every reader has read the previous one. That per-step hand-off orders every
// write after the reads of the data it overwrites, so the algorithms are free of data races (and TSan sees the mutex
// that orders them).
//
// With an emulated link (link_model.h) each read is one message: the reader sleeps until the
// link's time for it has passed before it marks the post read, so the sender, which waits for
// its readers, is held as long as a real transfer would hold it.
//
// Every wait has the group's deadline. A timeout, a mismatched collective or any other error
// aborts the whole group, so the other ranks fail at once instead of waiting out the timeout.
//
// Each rank sleeps on a condition variable of its own, and an event wakes only the ranks it
// concerns: a post wakes the ranks waiting for that sender, a read wakes the sender. With one
// shared variable every post and read woke all N ranks to find nothing to do, N^2 wake-ups per
// ring step: 64 in-process ranks on 2 cores spent 2 s per all-reduce doing that. A mismatched
// collective is still found at once without waking anyone: whichever of the two ranks arrives
// second sees the other's signature in its own first wait, and fails the group.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "duet/core/tensor.h"
#include "duet/parallel/comm/link_model.h"

namespace duet::parallel {

// One collective as one rank runs it.
struct CollectiveCall {
  int rank = 0;
  uint64_t seq = 0;       // 1-based; the same collective has the same seq on every rank
  std::string signature;  // "all_reduce(f32[7], sum)": must be equal on every rank
  std::chrono::steady_clock::time_point deadline;
  int posts = 0;           // posts this rank made in this collective
  std::vector<int> reads;  // posts read so far, per sending rank
  int64_t bytes_sent = 0;  // what the readers of this rank's posts copied, in bytes
};

class LocalRendezvous {
 public:
  LocalRendezvous(int world_size, std::chrono::milliseconds timeout, LinkModel link = {});

  int world_size() const { return static_cast<int>(ranks_.size()); }

  // Starts `rank`'s next collective; its deadline is now + timeout.
  CollectiveCall begin(int rank, std::string signature);
  // Posted tensors and fetch destinations are contiguous; only their numel must agree.
  // Makes `data` (undefined for a pure signal) readable by `readers` other ranks. Each reader
  // must read every post of this rank in this collective, in order.
  void post(CollectiveCall& call, const Tensor& data, int readers);
  // Waits for `from`'s next post in this collective and copies it into `dst` (skipped when
  // dst is undefined). dst must have the posted tensor's number of elements.
  void fetch(CollectiveCall& call, int from, const Tensor& dst);
  // The same, copying only the posted elements [offset, offset + dst.numel()): one post that
  // each reader takes its own part of (a scatter), one message per reader.
  void fetch_part(CollectiveCall& call, int from, const Tensor& dst, int64_t offset);
  // Waits until every reader has read this rank's last post: after it, the rank may write
  // what it posted, and the collective is over for this rank. Until then call.bytes_sent may
  // lack the reads of that post.
  void finish(CollectiveCall& call);

  // Fails the group: every wait, now and later, throws naming `rank` and `reason`.
  void abort(int rank, const std::string& reason);
  // `rank`'s communicator is gone: waiting for a collective it never started fails at once.
  void leave(int rank);

 private:
  struct RankState {
    std::condition_variable changed;  // this rank sleeps on it
    int waiting_for = -1;             // the rank whose post it waits for (-1: none)
    uint64_t arrived = 0;             // seq of the last collective this rank began
    std::string signature;            // that collective's
    bool left = false;
    // The outstanding post.
    uint64_t post_seq = 0;
    int post_index = -1;
    Tensor post_data;
    int readers_left = 0;
    int64_t bytes_read = 0;  // what readers copied from this rank's posts, not yet in its call
  };

  // Waits under `lock` until ready(); throws on abort, on a peer's mismatch or departure, and
  // at the deadline. `waiting_for` says what is missing, for the timeout message.
  template <class Ready>
  void wait(std::unique_lock<std::mutex>& lock, const CollectiveCall& call, Ready ready, int waiting_for);
  // fetch and fetch_part: `offset` is nullopt for a whole post.
  void read(CollectiveCall& call, int from, const Tensor& dst, std::optional<int64_t> offset);
  // With the lock held: waits until this rank's last post has been read, and counts its bytes.
  void wait_for_readers(std::unique_lock<std::mutex>& lock, CollectiveCall& call);
  void check_peers(const CollectiveCall& call);
  void wake_all();  // with the lock held: after an abort, a failure or a departure
  [[noreturn]] void fail(const CollectiveCall& call, const std::string& what);
  std::string timeout_message(const CollectiveCall& call, int waiting_for) const;

  const std::chrono::milliseconds timeout_;
  const LinkModel link_;
  mutable std::mutex mutex_;
  std::vector<RankState> ranks_;
  std::string abort_reason_;  // non-empty once the group has failed
};

}  // namespace duet::parallel
