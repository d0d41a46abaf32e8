// LinkModel: an emulated interconnect between logical devices (`duet compare --link NAME`).
//
// On a CPU every "link" between logical devices is a memory copy at tens of GB/s, so every run
// sits where communication is almost free. A LinkModel makes each message between two devices
// take at least what a real interconnect would: alpha + bytes / beta. The copy itself runs as
// before, and the message's thread then WAITS (sleeps until a deadline, never spins) for the
// rest of that time, so a communication thread's wait overlaps computation on the device's
// cores the way a DMA engine's or a NIC's transfer does.
//
// Every point-to-point message is one: each read of a post in the local communicator (so a
// ring all-reduce, reduce-scatter or all-gather pays one per step and chunk, the naive one per
// hop), and each copy between devices in DataParallel's scatter, broadcast, gather and
// gradient reduce (transfers.h). Each pair of devices has a full-duplex link of its own, except
// through host memory (`pcie-no-p2p`), where every message crosses two hops and all such
// messages of the process share one host channel, one after another.
// docs/parallel-strategies.md lists the presets and what the emulation leaves out.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace duet::parallel {

struct LinkModel {
  std::string name = "none";  // a preset's name, or "custom"
  double alpha_us = 0;        // per message (per hop through host memory)
  double beta_gbps = 0;       // 1e9 bytes per second (per hop); 0: no emulation
  // Through host memory: every message takes two hops, and all of them share one host channel.
  bool through_host = false;

  bool emulated() const { return beta_gbps > 0; }
  // The least time a message of `bytes` takes when alone on its link (ms); 0 for "none".
  double message_ms(int64_t bytes) const;
  // Sleeps until a message of `bytes` that began at `start` has taken the link's time (returns
  // at once when the copy took longer, or for "none"). Through host memory the message first
  // takes its turn on the shared host channel.
  void wait_out(std::chrono::steady_clock::time_point start, int64_t bytes) const;
  // "1gbe: 50 us + bytes / 0.117 GB/s per message"
  std::string describe() const;
};

// A preset (none, nvlink, pcie, pcie-no-p2p, 10gbe, 1gbe) or "ALPHA_US,BETA_GBPS"; throws a
// duet::Error naming the choices for anything else.
LinkModel link_model(const std::string& spec);
const std::vector<std::string>& link_preset_names();

// The emulated time of one phase of the ring over a buffer of `bytes` among `ranks`: a
// reduce-scatter of `bytes` or an all-gather into `bytes`, n-1 messages of 1/n of the buffer,
// one after another; of one ring all-reduce of `bytes` (the two phases, 2(n-1) messages); and
// of the naive all-reduce (n-1 whole messages into rank 0, then n-1 out of it at once), in ms:
// what the link adds, whatever the copies and additions take.
double emulated_ring_phase_ms(const LinkModel& link, int ranks, int64_t bytes);
double emulated_ring_all_reduce_ms(const LinkModel& link, int ranks, int64_t bytes);
double emulated_naive_all_reduce_ms(const LinkModel& link, int ranks, int64_t bytes);

}  // namespace duet::parallel
