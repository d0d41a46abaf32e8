#include "epoch_history.h"

#include <fstream>
#include <map>
#include <optional>

#include "duet/core/error.h"

namespace duet::apps {

nlohmann::json epoch_json(const parallel::EpochStats& e) {
  return {{"epoch", e.epoch + 1},        {"train_loss", e.train_loss}, {"train_acc", e.train_accuracy},
          {"test_acc", e.test_accuracy}, {"seconds", e.seconds},       {"images_per_second", e.images_per_second}};
}

parallel::EpochStats epoch_from_json(const nlohmann::json& j, const std::string& source) {
  auto number = [&](const char* key) {
    DUET_CHECK(j.is_object() && j.contains(key) && j[key].is_number(), source, ": an epoch without a number '", key,
               "': ", j.dump());
    return j[key].get<double>();
  };
  parallel::EpochStats e;
  e.epoch = static_cast<int64_t>(number("epoch")) - 1;
  e.train_loss = number("train_loss");
  e.train_accuracy = number("train_acc");
  e.test_accuracy = number("test_acc");
  e.seconds = number("seconds");
  e.images_per_second = number("images_per_second");
  return e;
}

std::string history_text(const std::vector<parallel::EpochStats>& history) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& e : history) list.push_back(epoch_json(e));
  return list.dump();
}

std::vector<parallel::EpochStats> parse_history(const std::string& text, const std::string& source) {
  nlohmann::json list = nlohmann::json::parse(text, nullptr, false);
  DUET_CHECK(list.is_array(), source, ": the history is not a JSON array");
  std::vector<parallel::EpochStats> history;
  for (const auto& j : list) history.push_back(epoch_from_json(j, source));
  return history;
}

namespace {

// The epoch of a --metrics line of this run (same model and seed), or nothing for any other line.
std::optional<parallel::EpochStats> run_epoch(const std::string& line, const TrainArgs& args, const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object() || j.value("model", "") != args.model || j.value("seed", uint64_t{0}) != args.seed) return {};
  try {
    return epoch_from_json(j, path);
  } catch (const Error&) {
    return {};  // a line of some other tool's: not this run's
  }
}

}  // namespace

std::vector<parallel::EpochStats> read_metrics_history(const std::string& path, const TrainArgs& args,
                                                       int64_t epochs_done) {
  std::ifstream in(path);
  std::map<int64_t, parallel::EpochStats> by_epoch;
  for (std::string line; std::getline(in, line);) {
    std::optional<parallel::EpochStats> e = run_epoch(line, args, path);
    if (e && e->epoch >= 0 && e->epoch < epochs_done) by_epoch[e->epoch] = *e;
  }
  std::vector<parallel::EpochStats> history;
  for (const auto& [epoch, e] : by_epoch) history.push_back(e);
  return history;
}

void drop_unsaved_epochs(const std::string& path, const TrainArgs& args, int64_t epochs_done) {
  std::ifstream in(path);
  std::string kept;
  bool dropped = false;
  for (std::string line; std::getline(in, line);) {
    std::optional<parallel::EpochStats> e = run_epoch(line, args, path);
    if (e && e->epoch >= epochs_done) {
      dropped = true;
      continue;
    }
    kept += line + "\n";
  }
  if (!dropped) return;
  in.close();
  std::ofstream out(path, std::ios::trunc);
  out << kept << std::flush;
  DUET_CHECK(out.good(), "cannot rewrite --metrics file ", path);
}

}  // namespace duet::apps
