// `duet train`'s flags, as parsed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli_common.h"
#include "duet/data/fashion_mnist.h"
#include "duet/parallel/comm/communicator.h"
#include "duet/parallel/strategy_kind.h"

namespace duet::apps {

struct TrainArgs {
  std::string model = "lenet";
  int64_t epochs = 10;
  int64_t batch_size = 256;
  OptimizerArgs optimizer;
  uint64_t seed = 0;
  std::string data_dir = data::kFashionMnistDir;
  int threads = 0;
  std::string device = "cpu";
  parallel::StrategyKind strategy = parallel::StrategyKind::single;
  int devices = 1;
  std::vector<int> device_ids;  // instead of --devices: these indices of --device's type
  std::string comm = "local";
  double comm_timeout = parallel::kDefaultCommTimeout.count() / 1000.0;  // seconds
  std::string save, resume, metrics, plot;
  bool profile = false;
  bool cuda_graph = false;
  int64_t accumulate = 1;  // micro-batches per optimizer step
  bool sync_bn = false;
  parallel::GradCompression grad_compression = parallel::GradCompression::none;
};

}  // namespace duet::apps
