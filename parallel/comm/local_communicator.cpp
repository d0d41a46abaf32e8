// The local group's algorithms, written as each rank's side of the exchange.
#include "duet/parallel/comm/local_communicator.h"

#include <algorithm>

#include "duet/autograd/factory.h"
#include "duet/core/error.h"
#include "duet/kernels/kernels.h"
#include "duet/parallel/comm/comm_thread.h"
#include "duet/parallel/comm/local_rendezvous.h"
#include "duet/parallel/comm/ring.h"

namespace duet::parallel {
namespace {

// Elements [range.begin, range.end) of a contiguous tensor, as a flat view (no autograd: the
// tensor may be a parameter that requires grad).
Tensor flat_slice(const Tensor& t, ring::Range range) {
  return t.as_strided({range.size()}, {1}, t.offset() + range.begin);
}

void add_into(const Tensor& acc, const Tensor& part) {
  if (acc.numel() > 0) kernels::binary(kernels::BinaryOp::add, acc, part, acc);
}

class LocalCommunicator final : public QueuedCommunicator {
 public:
  LocalCommunicator(std::shared_ptr<LocalRendezvous> rendezvous, int rank, Device device, LocalAlgorithm algorithm)
      : rendezvous_(std::move(rendezvous)), rank_(rank), device_(device), algorithm_(algorithm) {}

  ~LocalCommunicator() override {
    stop();  // queued collectives run (or time out) first
    rendezvous_->leave(rank_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return rendezvous_->world_size(); }
  Device device() const override { return device_; }
  std::string name() const override { return algorithm_ == LocalAlgorithm::ring ? "local-ring" : "local-naive"; }
  void abort(const std::string& reason) override { rendezvous_->abort(rank_, reason); }

 protected:
  void run_all_reduce(const Tensor& t, ReduceOp op) override {
    collective(describe_collective("all_reduce", t, parallel::name(op)), [&](CollectiveCall& call) {
      if (algorithm_ == LocalAlgorithm::ring) {
        ring_all_reduce(call, t, op);
      } else {
        reduce_to(call, t, 0, op);
        broadcast_from(call, t, 0);
      }
    });
  }

  void run_broadcast(const Tensor& t, int root) override {
    collective(describe_collective("broadcast", t, "root " + std::to_string(root)),
               [&](CollectiveCall& call) { broadcast_from(call, t, root); });
  }

  void run_reduce(const Tensor& t, int root, ReduceOp op) override {
    collective(describe_collective("reduce", t, "root " + std::to_string(root) + ", " + parallel::name(op)),
               [&](CollectiveCall& call) { reduce_to(call, t, root, op); });
  }

  void run_all_gather(const Tensor& t, const Tensor& out) override {
    collective(describe_collective("all_gather", t), [&](CollectiveCall& call) {
      Tensor mine = flat_slice(out, {rank_ * t.numel(), (rank_ + 1) * t.numel()});
      if (t.numel() > 0 && t.data_ptr() != mine.data_ptr()) kernels::copy(flat_slice(t, {0, t.numel()}), mine);
      if (algorithm_ == LocalAlgorithm::ring) {
        ring_all_gather(call, out, rank_);
        return;
      }
      // Naive: every rank reads every other rank's tensor directly.
      rendezvous_->post(call, t, world_size() - 1);
      for (int q = 0; q < world_size(); ++q)
        if (q != rank_) rendezvous_->fetch(call, q, flat_slice(out, {q * t.numel(), (q + 1) * t.numel()}));
    });
  }

  void run_reduce_scatter(const Tensor& in, const Tensor& out, ReduceOp op) override {
    collective(describe_collective("reduce_scatter", in, parallel::name(op)), [&](CollectiveCall& call) {
      if (algorithm_ == LocalAlgorithm::ring) ring_reduce_scatter_into(call, in, out);
      else naive_reduce_scatter(call, in, out);
      if (op == ReduceOp::avg) divide_in_place(out, world_size());
    });
  }

  bool compresses() const override { return true; }

  void run_all_reduce_compressed(const Tensor& t, GradCompression format, ReduceOp op) override {
    collective(describe_collective("all_reduce_compressed", t,
                                   std::string(parallel::name(format)) + ", " + parallel::name(op)),
               [&](CollectiveCall& call) {
                 if (algorithm_ == LocalAlgorithm::ring) ring_all_reduce_compressed(call, t, format, op);
                 else naive_all_reduce_compressed(call, t, format, op);
               });
  }

  void run_barrier() override {
    collective(describe_collective("barrier", Tensor()), [&](CollectiveCall& call) {
      rendezvous_->post(call, Tensor(), world_size() - 1);
      for (int q = 0; q < world_size(); ++q)
        if (q != rank_) rendezvous_->fetch(call, q, Tensor());
    });
  }

 private:
  // Runs one collective on this rank: its posts are all read when it returns. Any failure
  // fails the group, so the other ranks stop waiting for this one.
  template <class Body> void collective(std::string signature, Body body) {
    CollectiveCall call = rendezvous_->begin(rank_, std::move(signature));
    try {
      body(call);
      rendezvous_->finish(call);
    } catch (const std::exception& e) {
      rendezvous_->abort(rank_, e.what());
      throw;
    }
    count_bytes_sent(call.bytes_sent);
  }

  // Chunk i of t's flat data.
  Tensor chunk(const Tensor& t, int64_t i) const { return flat_slice(t, ring::chunk(t.numel(), world_size(), i)); }

  // Reduce-scatter in place, after which this rank owns chunk r+1 reduced (where the ring has
  // always put it: another chunk would start each sum from another rank's values and change
  // the results' last bits), then all-gather from there.
  void ring_all_reduce(CollectiveCall& call, const Tensor& t, ReduceOp op) {
    const int64_t owned = rank_ + 1;
    ring_reduce_scatter(call, t, owned, [](int, const Tensor& mine) { return mine; });
    // avg on the owned chunk only, before it is shared: each chunk is divided exactly once.
    if (op == ReduceOp::avg) divide_in_place(chunk(t, owned), world_size());
    ring_all_gather(call, t, owned);
  }

  // The ring's reduce-scatter phase over the n chunks of `in`. At step s this rank sends its
  // running sum of chunk owned-1-s to the right (at step 0 its own values), and adds the left
  // neighbour's running sum of chunk owned-2-s to its own values of that chunk, into
  // sum_into(s, its own values): the buffer that it sends at step s+1. After the n-1 steps that
  // last sum is chunk `owned` reduced over all ranks; returns it (with one rank, in's chunk).
  template <class SumInto>
  Tensor ring_reduce_scatter(CollectiveCall& call, const Tensor& in, int64_t owned, SumInto sum_into) {
    const int n = world_size();
    const int left = (rank_ + n - 1) % n;
    const Tensor received =
        n > 1 ? empty({(in.numel() + n - 1) / n}, {.dtype = in.dtype(), .device = device_}) : Tensor();
    Tensor sending = chunk(in, owned - 1);
    for (int s = 0; s < n - 1; ++s) {
      rendezvous_->post(call, sending, 1);
      Tensor mine = chunk(in, owned - 2 - s);
      Tensor part = flat_slice(received, {0, mine.numel()});
      rendezvous_->fetch(call, left, part);
      sending = sum_into(s, mine);
      if (mine.numel() > 0) kernels::binary(kernels::BinaryOp::add, mine, part, sending);
    }
    return sending;
  }

  // The ring's all-gather phase, in place in t: this rank holds chunk `owned`; at step s it
  // passes on chunk owned-s and receives chunk owned-s-1 from the left. A post's chunk is never
  // the one being written in the same step, and the next post waits for the read.
  void ring_all_gather(CollectiveCall& call, const Tensor& t, int64_t owned) {
    const int left = (rank_ + world_size() - 1) % world_size();
    for (int s = 0; s < world_size() - 1; ++s) {
      rendezvous_->post(call, chunk(t, owned - s), 1);
      rendezvous_->fetch(call, left, chunk(t, owned - s - 1));
    }
  }

  // The reduce-scatter phase on its own, with rank r owning chunk r. `in` is only read: the
  // running sums alternate between two buffers, since the one sent at step s-1 may still be
  // read while step s writes (posting at step s waits only for the reads of step s-1's post,
  // which is the buffer of step s-2), and the last step writes `out`.
  void ring_reduce_scatter_into(CollectiveCall& call, const Tensor& in, const Tensor& out) {
    const int n = world_size();
    const int64_t m = out.numel();
    const Tensor flat_out = flat_slice(out, {0, m});
    const Tensor sums = n > 2 ? empty({2 * m}, {.dtype = in.dtype(), .device = device_}) : Tensor();
    Tensor reduced = ring_reduce_scatter(call, in, rank_, [&](int s, const Tensor&) {
      return s == n - 2 ? flat_out : flat_slice(sums, {(s % 2) * m, (s % 2 + 1) * m});
    });
    if (n == 1 && m > 0) kernels::copy(reduced, flat_out);
  }

  // Naive: reduce onto rank 0 (into a copy there, since `in` is only read), which posts the sum
  // once; each rank copies its own chunk of it.
  void naive_reduce_scatter(CollectiveCall& call, const Tensor& in, const Tensor& out) {
    const int64_t m = out.numel();
    if (rank_ != 0) {
      reduce_to(call, in, 0, ReduceOp::sum);
      rendezvous_->fetch_part(call, 0, out, rank_ * m);
      return;
    }
    Tensor sum = empty({in.numel()}, {.dtype = in.dtype(), .device = device_});
    if (m > 0) kernels::copy(flat_slice(in, {0, in.numel()}), sum);
    reduce_to(call, sum, 0, ReduceOp::sum);
    rendezvous_->post(call, sum, world_size() - 1);
    if (m > 0) kernels::copy(flat_slice(sum, {0, m}), flat_slice(out, {0, m}));
  }

  // The compressed all-reduce's two phases, in 16-bit codes (two u8 per value). First each
  // rank posts all its codes once, and every other rank reads from it the chunk that it owns
  // (chunk r for rank r; a direct exchange, since a ring would pass on partial sums, rounded at
  // every hop): every rank sends (n-1)/n of the codes, as in the ring's reduce-scatter. The
  // owner sums its chunk in rank order and rounds it. Then the ring's all-gather passes the
  // reduced chunks' codes around, and every rank decodes the whole buffer.
  void ring_all_reduce_compressed(CollectiveCall& call, const Tensor& t, GradCompression format, ReduceOp op) {
    const int n = world_size();
    const int64_t numel = t.numel();
    const Tensor codes = encode(flat_slice(t, {0, numel}), format);
    auto code_chunk = [&](const Tensor& c, int64_t i) {
      const ring::Range r = ring::chunk(numel, n, i);
      return flat_slice(c, {2 * r.begin, 2 * r.end});
    };
    const ring::Range mine = ring::chunk(numel, n, rank_);
    std::vector<Tensor> contributions(static_cast<size_t>(n));
    rendezvous_->post(call, codes, n - 1);
    for (int q = 0; q < n; ++q) {
      Tensor& part = contributions[static_cast<size_t>(q)];
      if (q == rank_) {
        part = code_chunk(codes, rank_);
        continue;
      }
      part = empty({2 * mine.size()}, {.dtype = DType::u8, .device = device_});
      rendezvous_->fetch_part(call, q, part, 2 * mine.begin);
    }
    // The post of `codes` must be read before its chunk is overwritten with the sum's codes.
    rendezvous_->finish(call);
    const Tensor sum = sum_in_rank_order(contributions, mine.size(), format, op);
    if (mine.size() > 0) kernels::copy(encode(sum, format), code_chunk(codes, rank_));
    for (int s = 0; s < n - 1; ++s) {
      rendezvous_->post(call, code_chunk(codes, rank_ - s), 1);
      rendezvous_->fetch(call, (rank_ + n - 1) % n, code_chunk(codes, rank_ - s - 1));
    }
    rendezvous_->finish(call);
    decode(codes, flat_slice(t, {0, numel}), format);
  }

  // Naive: rank 0 reads every rank's codes, sums them in rank order, and posts the sum's codes
  // to all.
  void naive_all_reduce_compressed(CollectiveCall& call, const Tensor& t, GradCompression format, ReduceOp op) {
    const int64_t numel = t.numel();
    Tensor codes = encode(flat_slice(t, {0, numel}), format);
    if (rank_ != 0) {
      rendezvous_->post(call, codes, 1);
      rendezvous_->fetch(call, 0, codes);
    } else {
      std::vector<Tensor> contributions{codes};
      for (int q = 1; q < world_size(); ++q) {
        contributions.push_back(empty({2 * numel}, {.dtype = DType::u8, .device = device_}));
        rendezvous_->fetch(call, q, contributions.back());
      }
      codes = encode(sum_in_rank_order(contributions, numel, format, op), format);
      rendezvous_->post(call, codes, world_size() - 1);
      rendezvous_->finish(call);
    }
    decode(codes, flat_slice(t, {0, numel}), format);
  }

  // The f32 sum, in rank order, of the values of each rank's codes (avg: then divided by n).
  Tensor sum_in_rank_order(const std::vector<Tensor>& contributions, int64_t numel, GradCompression format,
                           ReduceOp op) const {
    Tensor sum = empty({numel}, {.dtype = DType::f32, .device = device_});
    Tensor part = empty({numel}, {.dtype = DType::f32, .device = device_});
    decode(contributions[0], sum, format);
    for (size_t q = 1; q < contributions.size(); ++q) {
      decode(contributions[q], part, format);
      add_into(sum, part);
    }
    if (op == ReduceOp::avg) divide_in_place(sum, world_size());
    return sum;
  }

  void reduce_to(CollectiveCall& call, const Tensor& t, int root, ReduceOp op) {
    const int n = world_size();
    if (rank_ != root) {
      rendezvous_->post(call, t, 1);
      return;
    }
    Tensor received = empty_like(t);
    for (int q = 0; q < n; ++q) {  // rank order, so the sum is deterministic
      if (q == root) continue;
      rendezvous_->fetch(call, q, received);
      add_into(t, received);
    }
    if (op == ReduceOp::avg) divide_in_place(t, n);
  }

  // After reduce_to, a non-root's post has been read before the root posts here, so fetching
  // into t never overwrites data that the root is still reading.
  void broadcast_from(CollectiveCall& call, const Tensor& t, int root) {
    if (rank_ == root) rendezvous_->post(call, t, world_size() - 1);
    else rendezvous_->fetch(call, root, t);
  }

  std::shared_ptr<LocalRendezvous> rendezvous_;
  int rank_;
  Device device_;
  LocalAlgorithm algorithm_;
};

}  // namespace

std::vector<std::shared_ptr<Communicator>> make_local_group(const std::vector<Device>& devices,
                                                            LocalGroupOptions options) {
  DUET_CHECK(!devices.empty(), "make_local_group: no devices");
  for (size_t i = 0; i < devices.size(); ++i)
    DUET_CHECK(std::count(devices.begin(), devices.end(), devices[i]) == 1, "make_local_group: device ", devices[i],
               " appears more than once (one rank per device)");
  auto rendezvous = std::make_shared<LocalRendezvous>(static_cast<int>(devices.size()), options.timeout, options.link);
  std::vector<std::shared_ptr<Communicator>> group;
  for (size_t i = 0; i < devices.size(); ++i)
    group.push_back(
        std::make_shared<LocalCommunicator>(rendezvous, static_cast<int>(i), devices[i], options.algorithm));
  return group;
}

std::vector<std::shared_ptr<Communicator>> make_local_group(const std::vector<Device>& devices,
                                                            LocalAlgorithm algorithm) {
  return make_local_group(devices, LocalGroupOptions{.algorithm = algorithm});
}

}  // namespace duet::parallel
