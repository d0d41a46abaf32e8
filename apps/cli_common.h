// What `duet train` and `duet compare` share: flag validators, the device group, the
// optimizer flags, and the exit codes.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "duet/core/device.h"
#include "duet/core/tensor.h"
#include "duet/optim/optimizer.h"

namespace duet::apps {

// Exit codes: 0 done, 1 the run failed (e.g. diverged), 2 bad input.
inline constexpr int kFailed = 1;
inline constexpr int kBadInput = 2;

// CLI11's numeric ranges print the whole double range; these say what is wanted. Both refuse
// what is not a finite number (inf, nan, 1e999).
CLI::Validator at_least(double low, const char* what);
// A finite number from low to high; the message says `what` and the range.
CLI::Validator in_range(double low, double high, const std::string& what);
// A whole number, digits only (no sign: "-1" is no seed), from low to high.
CLI::Validator whole_number(uint64_t low, uint64_t high, const std::string& what);
extern const CLI::Validator kPositive;     // "a positive integer" that an int64 holds
extern const CLI::Validator kNonNegative;  // "a number >= 0"
extern const CLI::Validator kSeed;         // any uint64

// Every path flag the user gave names a path: `--save ""` would otherwise be taken as no
// --save at all. Throws duet::Error naming the flag. `paths`: each flag's long name and value.
void check_paths_given(const std::set<std::string>& given,
                       const std::vector<std::pair<std::string, std::string>>& paths);

// count logical devices of first's type from first on: cpu:0..N-1 (or cuda:0..N-1). Throws
// duet::Error naming `flag` and the devices there are when the group runs past the last one:
// duet's 64 logical CPU devices (Device::parse's limit), or this machine's CUDA devices.
std::vector<Device> device_group(Device first, int count, const std::string& flag);
// The devices of `type` with these indices; throws like device_group for one that does not exist.
std::vector<Device> devices_with_ids(DeviceType type, const std::vector<int>& ids, const std::string& flag);

// More kernel threads than the machine's hardware threads only make them take turns: clamps
// `threads` to those and returns a note saying so, or "" when it fits.
std::string clamp_threads(int& threads, const std::string& flag);

// --comm-timeout SECONDS: how long a collective waits for the other ranks before the run fails.
// At most kMaxCommTimeoutSeconds, so that the deadline (now + timeout, in the steady clock's
// nanoseconds) cannot overflow.
inline constexpr double kMaxCommTimeoutSeconds = 1e6;
void add_comm_timeout_flag(CLI::App& cmd, double& seconds);
std::chrono::milliseconds comm_timeout(double seconds);

struct OptimizerArgs {
  std::string name = "sgd";  // sgd or adam
  double lr = 0.9;
  double momentum = 0;
  double weight_decay = 0;
  bool amsgrad = false;  // adam only
  bool maximize = false;
};
void add_optimizer_flags(CLI::App& cmd, OptimizerArgs& args);
// What is wrong with flags that do not go together (--amsgrad without --optimizer adam), or "".
std::string optimizer_args_problem(const OptimizerArgs& args);
std::unique_ptr<optim::Optimizer> make_optimizer(const OptimizerArgs& args, std::vector<Tensor> params);

}  // namespace duet::apps
