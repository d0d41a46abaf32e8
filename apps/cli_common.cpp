#include "cli_common.h"

#include <charconv>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <thread>

#include "duet/core/error.h"
#include "duet/kernels/cuda/runtime.h"
#include "duet/optim/adam.h"
#include "duet/optim/sgd.h"

namespace duet::apps {

namespace {

// `text` as a whole finite number in [low, high].
bool finite_within(const std::string& text, double low, double high) {
  try {
    size_t used = 0;
    const double value = std::stod(text, &used);
    return used == text.size() && std::isfinite(value) && value >= low && value <= high;
  } catch (const std::exception&) {
    return false;  // not a number, or out of double's range
  }
}

}  // namespace

CLI::Validator at_least(double low, const char* what) {
  return CLI::Validator(
      [low, what](std::string& text) -> std::string {
        if (finite_within(text, low, std::numeric_limits<double>::max())) return "";
        return "expected " + std::string(what) + ", got '" + text + "'";
      },
      what);
}

CLI::Validator in_range(double low, double high, const std::string& what) {
  std::ostringstream range;
  range << std::setprecision(12) << what << " from " << low << " to " << high;
  return CLI::Validator(
      [low, high, expected = range.str()](std::string& text) -> std::string {
        if (finite_within(text, low, high)) return "";
        return "expected " + expected + ", got '" + text + "'";
      },
      range.str());
}
CLI::Validator whole_number(uint64_t low, uint64_t high, const std::string& what) {
  const std::string expected = what + " from " + std::to_string(low) + " to " + std::to_string(high);
  return CLI::Validator(
      [low, high, expected](std::string& text) -> std::string {
        uint64_t value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (!text.empty() && ec == std::errc() && end == text.data() + text.size() && value >= low && value <= high) {
          return "";
        }
        return "expected " + expected + ", got '" + text + "'";
      },
      expected);
}

const CLI::Validator kPositive =
    whole_number(1, static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), "a positive integer");
const CLI::Validator kNonNegative = at_least(0, "a number >= 0");
const CLI::Validator kSeed = whole_number(0, std::numeric_limits<uint64_t>::max(), "a seed");

namespace {

// How many devices of `type` there are, and how to say so.
std::pair<int, std::string> device_limit(DeviceType type) {
  if (type == DeviceType::CUDA && cuda::device_count() > 0) {
    const int n = cuda::device_count();
    return {n, "this machine has " + std::to_string(n) + " CUDA device(s), cuda:0 to cuda:" + std::to_string(n - 1)};
  }
  const std::string kind = type == DeviceType::CPU ? "cpu" : "cuda";
  return {kMaxDevicesPerType, "duet has " + std::to_string(kMaxDevicesPerType) + " logical " +
                                  (type == DeviceType::CPU ? "CPU" : "CUDA") + " devices, " + kind + ":0 to " + kind +
                                  ":" + std::to_string(kMaxDevicesPerType - 1)};
}

}  // namespace

void check_paths_given(const std::set<std::string>& given,
                       const std::vector<std::pair<std::string, std::string>>& paths) {
  for (const auto& [flag, path] : paths) DUET_CHECK(!given.count(flag) || !path.empty(), flag, ": the path is empty");
}

std::vector<Device> device_group(Device first, int count, const std::string& flag) {
  const auto [limit, there_are] = device_limit(first.type);
  DUET_CHECK(first.index + count <= limit, flag, " ", count, " from ", first, " would run to ",
             Device{first.type, first.index + count - 1}, ", but ", there_are);
  std::vector<Device> group;
  for (int i = 0; i < count; ++i) group.push_back({first.type, first.index + i});
  return group;
}

std::vector<Device> devices_with_ids(DeviceType type, const std::vector<int>& ids, const std::string& flag) {
  const auto [limit, there_are] = device_limit(type);
  std::vector<Device> group;
  for (int index : ids) {
    DUET_CHECK(index < limit, flag, ": ", Device{type, index}, " does not exist: ", there_are);
    group.push_back({type, index});
  }
  return group;
}

std::string clamp_threads(int& threads, const std::string& flag) {
  const int hardware = static_cast<int>(std::thread::hardware_concurrency());
  if (hardware == 0 || threads <= hardware) return "";
  std::string note = flag + " " + std::to_string(threads) + " is more than this machine's " + std::to_string(hardware) +
                     " hardware threads; using " + std::to_string(hardware);
  threads = hardware;
  return note;
}

void add_comm_timeout_flag(CLI::App& cmd, double& seconds) {
  cmd.add_option("--comm-timeout", seconds, "Seconds a collective waits for the other ranks before the run fails")
      ->check(in_range(0.001, kMaxCommTimeoutSeconds, "a number of seconds"))
      ->capture_default_str();
}

std::chrono::milliseconds comm_timeout(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0 + 0.5));
}

void add_optimizer_flags(CLI::App& cmd, OptimizerArgs& args) {
  cmd.add_option("--lr", args.lr, "Learning rate")->check(kNonNegative)->capture_default_str();
  cmd.add_option("--optimizer", args.name, "sgd or adam")->check(CLI::IsMember({"sgd", "adam"}))->capture_default_str();
  cmd.add_option("--momentum", args.momentum, "SGD momentum")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd.add_option("--weight-decay", args.weight_decay, "L2 penalty")->check(kNonNegative)->capture_default_str();
  cmd.add_flag("--amsgrad", args.amsgrad, "Adam with AMSGrad: divide by the running maximum of the second moment");
  cmd.add_flag("--maximize", args.maximize, "Ascend the loss instead of descending it, as torch.optim's maximize");
}

std::string optimizer_args_problem(const OptimizerArgs& args) {
  if (args.amsgrad && args.name != "adam") return "--amsgrad is an Adam option: give --optimizer adam";
  return "";
}

std::unique_ptr<optim::Optimizer> make_optimizer(const OptimizerArgs& args, std::vector<Tensor> params) {
  if (args.name == "adam") {
    return std::make_unique<optim::Adam>(
        std::move(params),
        optim::AdamOptions{
            .lr = args.lr, .weight_decay = args.weight_decay, .amsgrad = args.amsgrad, .maximize = args.maximize});
  }
  const std::string problem = optimizer_args_problem(args);
  DUET_CHECK(problem.empty(), problem);
  return std::make_unique<optim::SGD>(
      std::move(params),
      optim::SGDOptions{
          .lr = args.lr, .momentum = args.momentum, .weight_decay = args.weight_decay, .maximize = args.maximize});
}

}  // namespace duet::apps
