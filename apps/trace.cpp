#include "trace.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "duet/core/error.h"

namespace duet::apps {

void write_chrome_trace(const std::vector<parallel::RunMeasurement>& runs, const std::string& path) {
  nlohmann::json events = nlohmann::json::array();
  for (size_t pid = 0; pid < runs.size(); ++pid) {
    const parallel::RunMeasurement& run = runs[pid];
    // Metadata events name the rows: "ddp on 2 devices" and its "cpu:0", "cpu:1".
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid},
                      {"args", {{"name", run.strategy + " on " + std::to_string(run.devices) + " device(s)"}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
    for (size_t tid = 0; tid < run.device_names.size(); ++tid) {
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid},
                        {"args", {{"name", run.device_names[tid]}}}});
    }
    for (const parallel::PhaseEvent& e : run.events) {
      events.push_back({{"name", parallel::name(e.phase)}, {"cat", run.strategy}, {"ph", "X"}, {"pid", pid},
                        {"tid", e.track}, {"ts", e.start_us}, {"dur", e.duration_us}});
    }
  }
  std::ofstream out(path);
  DUET_CHECK(out, "--trace: cannot write ", path);
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << '\n';
  DUET_CHECK(out.good(), "--trace: writing ", path, " failed");
}

}  // namespace duet::apps
