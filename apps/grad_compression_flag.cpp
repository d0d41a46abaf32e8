#include "grad_compression_flag.h"

#include <string>

#include "duet/core/error.h"

namespace duet::apps {

CLI::Option* add_grad_compression_flag(CLI::App& cmd, parallel::GradCompression& format) {
  // The name becomes the enum's number here, which CLI11 then reads into `format`.
  CLI::Validator names(
      [](std::string& text) -> std::string {
        try {
          text = std::to_string(static_cast<int>(parallel::parse_grad_compression(text)));
          return "";
        } catch (const Error& e) {
          return e.what();
        }
      },
      "");
  return cmd
      .add_option("--grad-compression", format,
                  "ddp: all-reduce the gradients as 16-bit floats, half the bytes (PyTorch's fp16 and bf16 "
                  "compress hooks): none, fp16 or bf16")
      ->type_name("NAME")
      ->transform(names)
      ->default_str(parallel::name(format));
}

}  // namespace duet::apps
