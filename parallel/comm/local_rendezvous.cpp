#include "duet/parallel/comm/local_rendezvous.h"

#include <utility>

#include "duet/core/error.h"
#include "duet/kernels/kernels.h"

namespace duet::parallel {
namespace {

// Both ends of a copy as flat views: a posted chunk and its destination agree in numel, not
// always in shape (all_gather writes a [d0, d1] tensor into a slice of its output).
Tensor flat(const Tensor& t) { return t.as_strided({t.numel()}, {1}, t.offset()); }

std::string where(const CollectiveCall& call) {
  return detail::concat(call.signature, " on rank ", call.rank, " (collective #", call.seq, ")");
}

}  // namespace

LocalRendezvous::LocalRendezvous(int world_size, std::chrono::milliseconds timeout, LinkModel link)
    : timeout_(timeout), link_(std::move(link)), ranks_(static_cast<size_t>(world_size)) {
  DUET_CHECK(world_size >= 1, "local communicator group: world size must be at least 1, got ", world_size);
  DUET_CHECK(timeout.count() > 0, "local communicator group: timeout must be positive");
}

CollectiveCall LocalRendezvous::begin(int rank, std::string signature) {
  CollectiveCall call;
  {
    std::lock_guard lock(mutex_);
    RankState& me = ranks_[static_cast<size_t>(rank)];
    me.arrived += 1;
    me.signature = signature;
    call.rank = rank;
    call.seq = me.arrived;
    call.signature = std::move(signature);
    call.deadline = std::chrono::steady_clock::now() + timeout_;
    call.reads.assign(ranks_.size(), 0);
  }
  // Nobody to wake: no rank's wait depends on another's arrival (see the header on mismatches).
  return call;
}

void LocalRendezvous::post(CollectiveCall& call, const Tensor& data, int readers) {
  std::unique_lock lock(mutex_);
  RankState& me = ranks_[static_cast<size_t>(call.rank)];
  wait_for_readers(lock, call);
  int index = call.posts++;
  if (readers == 0) return;
  me.post_seq = call.seq;
  me.post_index = index;
  me.post_data = data;
  me.readers_left = readers;
  for (RankState& peer : ranks_) {
    if (peer.waiting_for == call.rank) peer.changed.notify_all();
  }
}

void LocalRendezvous::fetch(CollectiveCall& call, int from, const Tensor& dst) { read(call, from, dst, std::nullopt); }

void LocalRendezvous::fetch_part(CollectiveCall& call, int from, const Tensor& dst, int64_t offset) {
  read(call, from, dst, offset);
}

void LocalRendezvous::read(CollectiveCall& call, int from, const Tensor& dst, std::optional<int64_t> offset) {
  RankState& src = ranks_[static_cast<size_t>(from)];
  const int index = call.reads[static_cast<size_t>(from)];
  Tensor data;
  {
    std::unique_lock lock(mutex_);
    wait(
        lock, call, [&] { return src.post_seq == call.seq && src.post_index == index && src.readers_left > 0; }, from);
    data = src.post_data;
  }
  const auto start = std::chrono::steady_clock::now();  // both ends are ready: the message begins
  // The copy runs unlocked, so that the readers of one post (a broadcast) copy in parallel.
  // The sender cannot touch `data` until this reader has marked it read, below.
  const int64_t bytes = dst.defined() ? dst.nbytes() : 0;
  if (dst.defined()) {
    const int64_t begin = offset.value_or(0);
    const bool fits = offset ? begin >= 0 && begin + dst.numel() <= data.numel() : data.numel() == dst.numel();
    DUET_CHECK(data.defined() && fits, where(call), ": rank ", from, " sent ",
               data.defined() ? data.describe() : std::string("no data"), " where ", dst.describe(),
               offset ? " from element " + std::to_string(begin) : std::string(), " was expected");
    if (dst.numel() > 0) kernels::copy(data.as_strided({dst.numel()}, {1}, data.offset() + begin), flat(dst));
  }
  link_.wait_out(start, bytes);
  std::lock_guard lock(mutex_);
  ++call.reads[static_cast<size_t>(from)];
  src.bytes_read += bytes;
  if (--src.readers_left == 0) {
    src.post_data = Tensor();  // let the sender's buffer go
    src.changed.notify_all();  // it waits for its readers before it posts again or finishes
  }
}

void LocalRendezvous::finish(CollectiveCall& call) {
  std::unique_lock lock(mutex_);
  wait_for_readers(lock, call);
}

void LocalRendezvous::wait_for_readers(std::unique_lock<std::mutex>& lock, CollectiveCall& call) {
  RankState& me = ranks_[static_cast<size_t>(call.rank)];
  wait(
      lock, call, [&] { return me.readers_left == 0; }, -1);
  call.bytes_sent += std::exchange(me.bytes_read, 0);
}

void LocalRendezvous::abort(int rank, const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (abort_reason_.empty()) abort_reason_ = detail::concat("rank ", rank, " failed: ", reason);
  wake_all();
}

void LocalRendezvous::leave(int rank) {
  std::lock_guard lock(mutex_);
  ranks_[static_cast<size_t>(rank)].left = true;
  wake_all();
}

void LocalRendezvous::wake_all() {
  for (RankState& rank : ranks_) rank.changed.notify_all();
}

template <class Ready> void LocalRendezvous::wait(std::unique_lock<std::mutex>& lock, const CollectiveCall& call,
                                                  Ready ready, int waiting_for) {
  RankState& me = ranks_[static_cast<size_t>(call.rank)];
  for (bool expired = false;;) {
    if (!abort_reason_.empty()) DUET_FAIL(where(call), " aborted, because ", abort_reason_);
    check_peers(call);
    if (ready()) return;
    if (expired) fail(call, timeout_message(call, waiting_for));
    me.waiting_for = waiting_for;
    expired = me.changed.wait_until(lock, call.deadline) == std::cv_status::timeout;
    me.waiting_for = -1;
  }
}

void LocalRendezvous::check_peers(const CollectiveCall& call) {
  for (size_t q = 0; q < ranks_.size(); ++q) {
    const RankState& peer = ranks_[q];
    if (peer.arrived == call.seq && peer.signature != call.signature)
      fail(call, detail::concat(where(call), ": rank ", q, " called ", peer.signature,
                                " instead (every rank must issue the same collectives in the same order)"));
    if (peer.left && peer.arrived < call.seq)
      fail(call, detail::concat(where(call), ": rank ", q, "'s communicator was destroyed before it called it"));
  }
}

void LocalRendezvous::fail(const CollectiveCall& call, const std::string& what) {
  // Called with the lock held. The first failure becomes the group's abort reason.
  if (abort_reason_.empty()) abort_reason_ = what;
  wake_all();
  throw Error(what);
}

std::string LocalRendezvous::timeout_message(const CollectiveCall& call, int waiting_for) const {
  std::string missing;
  int count = 0;
  for (size_t q = 0; q < ranks_.size(); ++q) {
    if (ranks_[q].arrived >= call.seq) continue;
    missing += (count++ ? ", " : "") + std::to_string(q);
  }
  std::string out = detail::concat(where(call), " timed out after ", timeout_.count(), " ms: ");
  if (count > 0) return out + (count == 1 ? "rank " : "ranks ") + missing + " never arrived";
  if (waiting_for >= 0)
    return out + detail::concat("every rank arrived, but rank ", waiting_for, " did not send its part");
  return out + "every rank arrived, but not every rank read this rank's data";
}

}  // namespace duet::parallel
