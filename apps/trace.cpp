#include "trace.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "duet/core/error.h"

namespace duet::apps {
namespace {

// The communication tracks follow the device tracks: device k's is thread devices + k.
void add_comm_tracks(const parallel::RunMeasurement& run, size_t pid, nlohmann::json& events) {
  const size_t devices = run.device_names.size();
  std::vector<bool> named(devices, false);
  // A rank's collectives run one at a time, in launch order, step after step.
  std::vector<double> previous_finish(devices, 0);
  for (const parallel::CommEvent& e : run.comm_events) {
    const auto track = static_cast<size_t>(e.track);
    const size_t tid = devices + track;
    if (!named.at(track)) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", pid},
                        {"tid", tid},
                        {"args", {{"name", run.device_names[track] + " comm"}}}});
      named[track] = true;
    }
    const double start = std::max(e.launch_us, previous_finish[track]);
    events.push_back({{"name", e.name + " ready"},
                      {"cat", parallel::to_string(run.strategy)},
                      {"ph", "i"},
                      {"s", "t"},
                      {"pid", pid},
                      {"tid", tid},
                      {"ts", e.ready_us}});
    events.push_back(
        {{"name", e.name},
         {"cat", parallel::to_string(run.strategy)},
         {"ph", "X"},
         {"pid", pid},
         {"tid", tid},
         {"ts", start},
         {"dur", std::max(0.0, e.finish_us - start)},
         {"args",
          {{"bytes", e.bytes}, {"ready_us", e.ready_us}, {"launch_us", e.launch_us}, {"finish_us", e.finish_us}}}});
    previous_finish[track] = e.finish_us;
  }
}

}  // namespace

void write_chrome_trace(const std::vector<parallel::RunMeasurement>& runs, const std::string& path) {
  nlohmann::json events = nlohmann::json::array();
  for (size_t pid = 0; pid < runs.size(); ++pid) {
    const parallel::RunMeasurement& run = runs[pid];
    // Metadata events name the rows: "ddp on 2 devices" and its "cpu:0", "cpu:1".
    events.push_back(
        {{"name", "process_name"},
         {"ph", "M"},
         {"pid", pid},
         {"args",
          {{"name", parallel::to_string(run.strategy) + " on " + std::to_string(run.devices) + " device(s)"}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
    for (size_t tid = 0; tid < run.device_names.size(); ++tid) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", pid},
                        {"tid", tid},
                        {"args", {{"name", run.device_names[tid]}}}});
    }
    for (const parallel::PhaseEvent& e : run.events) {
      events.push_back({{"name", parallel::name(e.phase)},
                        {"cat", parallel::to_string(run.strategy)},
                        {"ph", "X"},
                        {"pid", pid},
                        {"tid", e.track},
                        {"ts", e.start_us},
                        {"dur", e.duration_us}});
    }
    add_comm_tracks(run, pid, events);
  }
  std::ofstream out(path);
  DUET_CHECK(out, "--trace: cannot write ", path);
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << '\n';
  DUET_CHECK(out.good(), "--trace: writing ", path, " failed");
}

}  // namespace duet::apps
