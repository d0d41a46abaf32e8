// --grad-compression: ddp's gradient compression (parallel/comm/grad_compression.h), parsed
// once into the enum by parse_grad_compression, whose error names the flag and the choices.
#pragma once

#include <CLI/CLI.hpp>

#include "duet/parallel/comm/grad_compression.h"

namespace duet::apps {

CLI::Option* add_grad_compression_flag(CLI::App& cmd, parallel::GradCompression& format);

}  // namespace duet::apps
