// `tfm quantize`: a model file whose linear layers and output matrix are stored in int8, as
// `--quantize int8` would quantize them at every load: a quarter of the bytes to read, check and
// hold, no float model held on the way, and the same translations.
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "app/command.h"
#include "model/model_file.h"

namespace tfm {
namespace {

struct QuantizeOptions {
  std::string model;
  std::string output;
  std::string type = "int8";
};

void run_quantize(const QuantizeOptions& options) {
  if (options.type != "int8") throw std::invalid_argument("--type " + options.type + ": expected int8");
  auto loaded = load_float_model_file(options.model, torch::kCPU, "quantizing");
  save_model_file(options.output, loaded.model, loaded.tokenizer_proto, loaded.shortlist, ModelFileWeights::kInt8);
  const auto mib = [](const std::string& path) {
    return static_cast<double>(std::filesystem::file_size(path)) / (1024.0 * 1024.0);
  };
  spdlog::info("wrote {} ({:.1f} MiB, int8{}) from {} ({:.1f} MiB)", options.output, mib(options.output),
               loaded.shortlist.empty() ? "" : ", with its shortlist", options.model, mib(options.model));
}

}  // namespace

void add_quantize_command(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Write a model file with its linear layers and output matrix in int8 (a quarter of the size; it translates on "
      "the CPU exactly as --quantize int8 does with the float model)");
  cmd->add_option("--model,-m", options->model, "Model file or checkpoint to quantize (float32 or bfloat16)")
      ->required();
  cmd->add_option("--output,-o", options->output, "Model file to write")->required();
  cmd->add_option("--type", options->type, "Quantization: int8 (one scale per row)")->capture_default_str();
  cmd->callback([options, &action] { action = [options] { run_quantize(*options); }; });
}

}  // namespace tfm
