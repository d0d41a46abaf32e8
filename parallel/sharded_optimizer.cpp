#include "duet/parallel/sharded_optimizer.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/core/error.h"

namespace duet::parallel {
namespace {

// Entry `e`'s number of elements: up to the next entry's offset, or the bucket's end.
int64_t entry_numel(const BucketLayout::Bucket& bucket, size_t e) {
  const int64_t end = e + 1 < bucket.entries.size() ? bucket.entries[e + 1].offset : bucket.numel;
  return end - bucket.entries[e].offset;
}

// The parameter's elements [offset, offset + numel), flat, sharing its storage.
Tensor flat_span(const Tensor& t, int64_t offset, int64_t numel) {
  return t.detach().reshape({t.numel()}).narrow(0, offset, numel);
}

std::string state_key(size_t index, const std::string& name) { return std::to_string(index) + "." + name; }

}  // namespace

std::vector<ShardPiece> shard_pieces(const BucketLayout& layout, int rank, int world_size) {
  DUET_CHECK(world_size > 0 && rank >= 0 && rank < world_size, "shard_pieces: rank ", rank, " of ", world_size);
  std::vector<ShardPiece> pieces;
  for (size_t b = 0; b < layout.buckets.size(); ++b) {
    const BucketLayout::Bucket& bucket = layout.buckets[b];
    const int64_t chunk = bucket_chunk(bucket.numel, world_size);
    const int64_t begin = rank * chunk, end = std::min(bucket.numel, begin + chunk);
    // Entries are in offset order: each one's overlap with [begin, end) is a piece.
    for (size_t e = 0; e < bucket.entries.size(); ++e) {
      const int64_t lo = std::max(begin, bucket.entries[e].offset);
      const int64_t hi = std::min(end, bucket.entries[e].offset + entry_numel(bucket, e));
      if (lo >= hi) continue;
      pieces.push_back({.param = bucket.entries[e].param,
                        .bucket = b,
                        .param_offset = lo - bucket.entries[e].offset,
                        .chunk_offset = lo - begin,
                        .numel = hi - lo});
    }
  }
  return pieces;
}

ShardedOptimizer::ShardedOptimizer(std::vector<Tensor> params, std::shared_ptr<BucketReducer> reducer,
                                   std::shared_ptr<Communicator> comm, const OptimizerFactory& make_optimizer)
    : Optimizer(std::move(params), 0), reducer_(std::move(reducer)), comm_(std::move(comm)) {
  DUET_CHECK(reducer_ && comm_ && make_optimizer, "ShardedOptimizer: needs a reducer, a communicator and a factory");
  DUET_CHECK(reducer_->layout().slot.size() == this->params().size(), "ShardedOptimizer: the layout has ",
             reducer_->layout().slot.size(), " parameters, the replica ", this->params().size());
  const std::unique_ptr<Optimizer> whole = make_optimizer(this->params());
  DUET_CHECK(whole, "ShardedOptimizer: the optimizer factory returned null for rank ", comm_->rank());
  pieces_ = shard_pieces(reducer_->layout(), comm_->rank(), comm_->world_size());
  for (const ShardPiece& piece : pieces_) {
    const Tensor& p = this->params()[piece.param];
    piece_tensors_.push_back(zeros({piece.numel}, {.dtype = p.dtype(), .device = p.device()}).requires_grad_());
  }
  inner_ = whole->make_like(piece_tensors_);
  Optimizer::set_lr(whole->lr());
  // What the factory loaded (a checkpoint's state), this rank's share of it.
  std::map<std::string, Tensor> state;
  for (const auto& [name, t] : whole->state()) state.emplace(name, t);
  load_state(state);
  group_ = {this};
}

void ShardedOptimizer::set_lr(double lr) {
  Optimizer::set_lr(lr);
  if (inner_) inner_->set_lr(lr);
}

std::unique_ptr<optim::Optimizer> ShardedOptimizer::make_like(std::vector<Tensor> params) const {
  return inner_->make_like(std::move(params));
}

Tensor ShardedOptimizer::chunk_of(const Tensor& flat) const {
  const int64_t chunk = flat.numel() / comm_->world_size();
  return flat.narrow(0, comm_->rank() * chunk, chunk);
}

Tensor ShardedOptimizer::param_span(const ShardPiece& piece) const {
  return flat_span(params()[piece.param], piece.param_offset, piece.numel);
}

void ShardedOptimizer::step() {
  NoGradGuard no_grad;
  ++step_count_;
  for (size_t i = 0; i < params().size(); ++i) {
    if (reducer_->used(i)) count_update(i);
  }
  // The pieces start from the replica (a resumed model included), and an unused parameter's
  // pieces get no gradient, so that the inner optimizer skips them as single-device training would.
  for (size_t k = 0; k < pieces_.size(); ++k) {
    const ShardPiece& piece = pieces_[k];
    piece_tensors_[k].copy_(param_span(piece));
    piece_tensors_[k].set_grad(reducer_->used(piece.param)
                                   ? reducer_->reduced_chunk(piece.bucket).narrow(0, piece.chunk_offset, piece.numel)
                                   : Tensor());
  }
  inner_->step();

  // Each rank's updated chunk into its place in the bucket buffers, then every chunk to every rank.
  const BucketLayout& layout = reducer_->layout();
  for (size_t k = 0; k < pieces_.size(); ++k) {
    const ShardPiece& piece = pieces_[k];
    chunk_of(reducer_->bucket_buffer(piece.bucket)).narrow(0, piece.chunk_offset, piece.numel).copy_(piece_tensors_[k]);
  }
  std::vector<std::shared_ptr<Work>> works;
  gather_events_.assign(layout.buckets.size(), {});
  for (size_t b = 0; b < layout.buckets.size(); ++b) {
    const Tensor& flat = reducer_->bucket_buffer(b);
    const double launch = trace_now_us();
    gather_events_[b] = {
        .name = "all-gather " + std::to_string(b), .ready_us = launch, .launch_us = launch, .bytes = flat.nbytes()};
    works.push_back(comm_->all_gather_into_async(chunk_of(flat), flat));
  }
  for (size_t b = 0; b < works.size(); ++b) {
    works[b]->wait();
    if (auto at = works[b]->finished_at()) gather_events_[b].finish_us = trace_us(*at);
  }
  for (size_t i = 0; i < params().size(); ++i) {
    if (!reducer_->used(i)) continue;  // unchanged on every rank
    const auto [b, e] = layout.slot[i];
    const Tensor& p = params()[i];
    flat_span(p, 0, p.numel())
        .copy_(reducer_->bucket_buffer(b).narrow(0, layout.buckets[b].entries[e].offset, p.numel()));
  }
}

void ShardedOptimizer::write_chunks(const std::string& name, const std::vector<Tensor>& flats) const {
  NoGradGuard no_grad;
  const nn::NamedTensors inner_state = inner_->state();
  const std::map<std::string, Tensor> state(inner_state.begin(), inner_state.end());
  for (size_t k = 0; k < pieces_.size(); ++k) {
    auto it = state.find(state_key(k, name));
    if (it == state.end()) continue;  // never updated: zeros, and not saved
    const ShardPiece& piece = pieces_[k];
    const Tensor& flat = flats[piece.bucket];
    chunk_of(flat).narrow(0, piece.chunk_offset, piece.numel).copy_(it->second.to(flat.device()));
  }
}

nn::NamedTensors ShardedOptimizer::state() const {
  NoGradGuard no_grad;
  const BucketLayout& layout = reducer_->layout();
  const int world = comm_->world_size();
  const bool local = group_.size() == static_cast<size_t>(world);
  std::map<std::string, std::vector<Tensor>> gathered;  // per buffer name, per bucket: the whole padded buffer
  for (const std::string& name : buffer_names()) {
    std::vector<Tensor>& flats = gathered[name];
    for (const BucketLayout::Bucket& bucket : layout.buckets) {
      const int64_t chunk = bucket_chunk(bucket.numel, world);
      flats.push_back(zeros({chunk * world}, {.dtype = bucket.dtype, .device = comm_->device()}));
    }
    if (local) {
      // Every rank's pieces are in this process: each writes its chunks into these buffers.
      for (const ShardedOptimizer* rank : group_) rank->write_chunks(name, flats);
    } else {
      write_chunks(name, flats);
      for (const Tensor& flat : flats) comm_->all_gather_into(chunk_of(flat), flat);
    }
  }
  nn::NamedTensors out;
  out.emplace_back("step", from_vector<int64_t>({step_count_}, {1}));
  for (size_t i = 0; i < params().size(); ++i) {
    if (updates(i) == 0) continue;  // no state yet, as an unsharded optimizer's
    const auto [b, e] = layout.slot[i];
    const Tensor& p = params()[i];
    for (const auto& [name, flats] : gathered) {
      Tensor whole = flats[b].narrow(0, layout.buckets[b].entries[e].offset, p.numel()).reshape(p.sizes());
      out.emplace_back(state_key(i, name), whole.to(cpu(0)).clone());
    }
    out.emplace_back(state_key(i, "step"), from_vector<int64_t>({updates(i)}, {1}));
  }
  return out;
}

void ShardedOptimizer::load_state(const std::map<std::string, Tensor>& state) {
  // The counts and shapes are checked by an unsharded load, without the buffers (which would
  // take the whole state's memory); a parameter without a count (an old checkpoint) counts
  // the global step when it has buffers, as Optimizer::load_state says.
  std::map<std::string, Tensor> counts;
  const auto step = state.find("step");
  if (step != state.end()) counts.emplace("step", step->second);
  for (size_t i = 0; i < params().size(); ++i) {
    if (auto it = state.find(state_key(i, "step")); it != state.end()) {
      counts.emplace(it->first, it->second);
      continue;
    }
    for (const std::string& name : buffer_names()) {
      if (state.count(state_key(i, name)) && step != state.end()) {
        counts.emplace(state_key(i, "step"), step->second);
        break;
      }
    }
  }
  for (const auto& [name, t] : state) {
    if (counts.count(name)) continue;
    // A buffer: its parameter's shape is checked here, as the unsharded load would.
    const size_t dot = name.find('.');
    size_t index = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + (dot == std::string::npos ? 0 : dot), index);
    DUET_CHECK(dot != std::string::npos && ec == std::errc() && end == name.data() + dot && index < params().size(),
               "optimizer state: unexpected entry '", name, "' for an optimizer over ", params().size(), " parameters");
    DUET_CHECK(t.sizes() == params()[index].sizes(), "optimizer state: '", name, "' has shape ", shape_str(t.sizes()),
               " but parameter ", index, " has shape ", shape_str(params()[index].sizes()));
  }
  Optimizer::load_state(counts);

  std::map<std::string, Tensor> shard;
  if (step != state.end()) shard.emplace("step", step->second);
  for (size_t k = 0; k < pieces_.size(); ++k) {
    const ShardPiece& piece = pieces_[k];
    if (updates(piece.param) > 0) {
      shard.emplace(state_key(k, "step"), from_vector<int64_t>({updates(piece.param)}, {1}));
    }
    for (const auto& [name, t] : state) {
      const std::string prefix = std::to_string(piece.param) + ".";
      if (name.rfind(prefix, 0) != 0 || counts.count(name)) continue;
      shard.emplace(state_key(k, name.substr(prefix.size())),
                    flat_span(t.contiguous(), piece.param_offset, piece.numel).clone());
    }
  }
  inner_->load_state(shard);
}

}  // namespace duet::parallel
