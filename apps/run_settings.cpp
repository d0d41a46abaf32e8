#include "run_settings.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "duet/core/device.h"
#include "duet/core/error.h"
#include "duet/nn/models/models.h"
#include "duet/parallel/strategy.h"

namespace duet::apps {
namespace {

// identity: the checkpoint's tensors belong to this value, so another one is refused.
// tunable: another value is a deliberate change. placement: defaulted as a group.
enum class Kind { identity, tunable, placement };

constexpr double kUnbounded = std::numeric_limits<double>::max();

struct Setting {
  const char* key;   // in the checkpoint's metadata
  const char* flag;  // on the command line
  Kind kind;
  std::string (*get)(const TrainArgs&);
  void (*set)(TrainArgs&, const std::string&);  // throws std::invalid_argument on bad text
  // What a value must be, or "" when the one in the args is fine: a checkpoint's metadata is
  // checked as strictly as the command line.
  std::string (*problem)(const TrainArgs&);
};

// The shortest text that reads back as the same double ("0.1", not "0.10000000000000001").
std::string number(double value) {
  char text[32];
  auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  return std::string(text, end);
}

template <class T> T parse(const std::string& text) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) throw std::invalid_argument(text);
  return value;
}

std::string boolean(bool value) { return value ? "true" : "false"; }

bool parse_boolean(const std::string& text) {
  if (text != "true" && text != "false") throw std::invalid_argument(text);
  return text == "true";
}

std::string join(const std::vector<int>& values) {
  std::string text;
  for (int v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
  return text;
}

std::vector<int> split(const std::string& text) {
  std::vector<int> values;
  for (size_t start = 0; start < text.size();) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    values.push_back(parse<int>(text.substr(start, comma - start)));
    start = comma + 1;
  }
  return values;
}

std::string one_of(const std::string& value, const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& name : names) {
    if (name == value) return "";
    list += (list.empty() ? "" : ", ") + name;
  }
  return "one of " + list;
}

std::string finite_within(double value, double low, double high) {
  if (std::isfinite(value) && value >= low && value <= high) return "";
  if (high == kUnbounded) return "a finite number >= " + number(low);
  return "a number from " + number(low) + " to " + number(high);
}

std::string at_least_one(int64_t value) { return value >= 1 ? "" : "a whole number >= 1"; }

std::string no_problem(const TrainArgs&) { return ""; }

std::string device_problem(const TrainArgs& a) {
  try {
    Device::parse(a.device);
    return "";
  } catch (const std::exception&) {
    return "cpu, cpu:N, cuda or cuda:N";
  }
}

std::string device_ids_problem(const TrainArgs& a) {
  for (int id : a.device_ids) {
    if (id < 0 || id >= kMaxDevicesPerType) return "device indices from 0 to " + std::to_string(kMaxDevicesPerType - 1);
  }
  return "";
}

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = {
      {"model", "--model", Kind::identity, [](const TrainArgs& a) { return a.model; },
       [](TrainArgs& a, const std::string& v) { a.model = v; },
       [](const TrainArgs& a) { return one_of(a.model, nn::models::names()); }},
      {"optimizer", "--optimizer", Kind::identity, [](const TrainArgs& a) { return a.optimizer.name; },
       [](TrainArgs& a, const std::string& v) { a.optimizer.name = v; },
       [](const TrainArgs& a) {
         return one_of(a.optimizer.name, {"sgd", "adam"});
       }},
      {"lr", "--lr", Kind::tunable, [](const TrainArgs& a) { return number(a.optimizer.lr); },
       [](TrainArgs& a, const std::string& v) { a.optimizer.lr = parse<double>(v); },
       [](const TrainArgs& a) { return finite_within(a.optimizer.lr, 0, kUnbounded); }},
      {"momentum", "--momentum", Kind::tunable, [](const TrainArgs& a) { return number(a.optimizer.momentum); },
       [](TrainArgs& a, const std::string& v) { a.optimizer.momentum = parse<double>(v); },
       [](const TrainArgs& a) { return finite_within(a.optimizer.momentum, 0, 1); }},
      {"weight_decay", "--weight-decay", Kind::tunable,
       [](const TrainArgs& a) { return number(a.optimizer.weight_decay); },
       [](TrainArgs& a, const std::string& v) { a.optimizer.weight_decay = parse<double>(v); },
       [](const TrainArgs& a) { return finite_within(a.optimizer.weight_decay, 0, kUnbounded); }},
      // identity: the checkpoint's optimizer state has max_exp_avg_sq exactly when it is on.
      {"amsgrad", "--amsgrad", Kind::identity, [](const TrainArgs& a) { return boolean(a.optimizer.amsgrad); },
       [](TrainArgs& a, const std::string& v) { a.optimizer.amsgrad = parse_boolean(v); }, no_problem},
      {"maximize", "--maximize", Kind::tunable, [](const TrainArgs& a) { return boolean(a.optimizer.maximize); },
       [](TrainArgs& a, const std::string& v) { a.optimizer.maximize = parse_boolean(v); }, no_problem},
      {"batch_size", "--batch-size", Kind::tunable, [](const TrainArgs& a) { return std::to_string(a.batch_size); },
       [](TrainArgs& a, const std::string& v) { a.batch_size = parse<int64_t>(v); },
       [](const TrainArgs& a) { return at_least_one(a.batch_size); }},
      {"epochs", "--epochs", Kind::tunable, [](const TrainArgs& a) { return std::to_string(a.epochs); },
       [](TrainArgs& a, const std::string& v) { a.epochs = parse<int64_t>(v); },
       [](const TrainArgs& a) { return at_least_one(a.epochs); }},
      {"seed", "--seed", Kind::tunable, [](const TrainArgs& a) { return std::to_string(a.seed); },
       [](TrainArgs& a, const std::string& v) { a.seed = parse<uint64_t>(v); }, no_problem},
      // Micro-batches per step and SyncBatchNorm change every step's result, so a resumed run
      // must keep them.
      {"accumulate", "--accumulate", Kind::tunable, [](const TrainArgs& a) { return std::to_string(a.accumulate); },
       [](TrainArgs& a, const std::string& v) { a.accumulate = parse<int64_t>(v); },
       [](const TrainArgs& a) { return at_least_one(a.accumulate); }},
      {"sync_bn", "--sync-bn", Kind::tunable, [](const TrainArgs& a) { return boolean(a.sync_bn); },
       [](TrainArgs& a, const std::string& v) { a.sync_bn = parse_boolean(v); }, no_problem},
      {"grad_compression", "--grad-compression", Kind::tunable,
       [](const TrainArgs& a) { return std::string(parallel::name(a.grad_compression)); },
       [](TrainArgs& a, const std::string& v) { a.grad_compression = parallel::parse_grad_compression(v); },
       no_problem},
      {"strategy", "--strategy", Kind::placement, [](const TrainArgs& a) { return parallel::to_string(a.strategy); },
       [](TrainArgs& a, const std::string& v) { a.strategy = parallel::parse_strategy_kind(v); }, no_problem},
      {"comm", "--comm", Kind::placement, [](const TrainArgs& a) { return a.comm; },
       [](TrainArgs& a, const std::string& v) { a.comm = v; },
       [](const TrainArgs& a) {
         return one_of(a.comm, {"local", "mpi"});
       }},
      {"device", "--device", Kind::placement, [](const TrainArgs& a) { return a.device; },
       [](TrainArgs& a, const std::string& v) { a.device = v; }, device_problem},
      {"devices", "--devices", Kind::placement, [](const TrainArgs& a) { return std::to_string(a.devices); },
       [](TrainArgs& a, const std::string& v) { a.devices = parse<int>(v); },
       [](const TrainArgs& a) {
         return a.devices >= 1 && a.devices <= kMaxDevicesPerType
                    ? std::string()
                    : "a whole number from 1 to " + std::to_string(kMaxDevicesPerType);
       }},
      {"device_ids", "--device-ids", Kind::placement, [](const TrainArgs& a) { return join(a.device_ids); },
       [](TrainArgs& a, const std::string& v) { a.device_ids = split(v); }, device_ids_problem},
  };
  return table;
}

// Every setting the checkpoint records is a value its flag would take: throws naming the
// file, the setting, its text and what it must be.
void check_recorded(const std::map<std::string, std::string>& checkpoint, const std::string& checkpoint_path) {
  for (const Setting& s : settings()) {
    auto it = checkpoint.find(s.key);
    if (it == checkpoint.end()) continue;
    TrainArgs scratch;
    std::string problem;
    try {
      s.set(scratch, it->second);
      problem = s.problem(scratch);
    } catch (const Error& e) {
      problem = "a value of " + std::string(s.flag) + " (" + e.what() + ")";  // the parser's own reason
    } catch (const std::exception&) {
      problem = "a value of " + std::string(s.flag);
    }
    DUET_CHECK(problem.empty(), checkpoint_path, ": checkpoint metadata '", s.key, "' is '", it->second, "', expected ",
               problem);
  }
}

std::string shown(const std::string& value) { return value.empty() ? "(none)" : value; }

}  // namespace

double default_lr(const std::string& model, const std::string& optimizer) {
  if (optimizer == "adam") return 1e-3;
  if (model == "lenet") return 0.9;  // sigmoids learn slowly
  if (model == "resnet18") return 0.1;
  return 0.2;  // mlp, lenet-relu
}

std::map<std::string, std::string> run_settings(const TrainArgs& args) {
  std::map<std::string, std::string> out;
  for (const Setting& s : settings()) out[s.key] = s.get(args);
  return out;
}

std::vector<std::string> settle_run_settings(TrainArgs& args, const GivenFlags& given,
                                             const std::map<std::string, std::string>* checkpoint,
                                             const std::string& checkpoint_path) {
  std::vector<std::string> notes;
  GivenFlags settled = given;  // by the user, or below by the checkpoint
  std::vector<const Setting*> unrecorded;
  if (checkpoint) {
    check_recorded(*checkpoint, checkpoint_path);
    bool placement_given = false;
    for (const Setting& s : settings()) placement_given |= s.kind == Kind::placement && given.count(s.flag) > 0;
    for (const Setting& s : settings()) {
      auto it = checkpoint->find(s.key);
      if (it == checkpoint->end()) {
        unrecorded.push_back(&s);
        continue;
      }
      const std::string& theirs = it->second;
      const bool overridden = given.count(s.flag) > 0 || (s.kind == Kind::placement && placement_given);
      if (!overridden) {
        s.set(args, theirs);  // check_recorded read it
        settled.insert(s.flag);
        continue;
      }
      const std::string ours = s.get(args);
      if (ours == theirs) continue;
      DUET_CHECK(s.kind != Kind::identity, checkpoint_path, ": checkpoint of ", s.key, " '", theirs, "', but ", s.flag,
                 " is '", ours, "'; leave ", s.flag, " out to continue the checkpoint's run");
      notes.push_back(std::string(s.flag) + " " + shown(ours) + " instead of the checkpoint's " + shown(theirs));
    }
  }
  if (!settled.count("--lr")) args.optimizer.lr = default_lr(args.model, args.optimizer.name);
  if (!unrecorded.empty()) {
    std::string flags, assumed;
    for (const Setting* s : unrecorded) {
      flags += (flags.empty() ? "" : ", ") + std::string(s->flag);
      assumed += (assumed.empty() ? "" : ", ") + std::string(s->flag) + " " + shown(s->get(args));
    }
    notes.push_back(checkpoint_path + " does not record " + flags + " (it predates duet recording them): assuming " +
                    assumed);
  }
  return notes;
}

}  // namespace duet::apps
