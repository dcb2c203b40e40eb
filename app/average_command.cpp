// `tfm average`: element-wise mean of several checkpoints' parameters (§6.1: the last 5 or 20).
#include <spdlog/spdlog.h>

#include <memory>

#include "app/command.h"
#include "train/checkpoint_average.h"

namespace tfm {
namespace {

struct AverageOptions {
  std::vector<std::string> inputs;
  std::string output;
};

void run_average(const AverageOptions& options) {
  auto averaged = average_checkpoints(options.inputs);
  save_model_file(options.output, averaged.model, averaged.tokenizer_proto);
  spdlog::info("averaged {} checkpoints into {}", options.inputs.size(), options.output);
}

}  // namespace

void add_average_command(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<AverageOptions>();
  CLI::App* cmd = app.add_subcommand("average", "Average the parameters of checkpoints into one model file");
  cmd->add_option("--inputs", options->inputs, "Checkpoints of one training run")->required();
  cmd->add_option("--output,-o", options->output, "Model file to write")->required();
  cmd->callback([options, &action] { action = [options] { run_average(*options); }; });
}

}  // namespace tfm
