// `tfm average`: element-wise mean of several checkpoints' parameters (§6.1: the last 5 or 20).
#include <spdlog/spdlog.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include <torch/torch.h>

#include "app/command.h"
#include "model/model_file.h"

namespace tfm {
namespace {

struct AverageOptions {
  std::vector<std::string> inputs;
  std::string output;
};

void run_average(const AverageOptions& options) {
  if (options.inputs.size() < 2) throw std::invalid_argument("--inputs needs at least two checkpoints");
  auto first = load_model_file(options.inputs.front(), torch::kCPU);
  const nlohmann::json config = first.config;
  torch::NoGradGuard no_grad;
  auto sums = first.model->named_parameters();
  std::vector<torch::Tensor> totals;
  for (const auto& item : sums) totals.push_back(item.value().to(torch::kFloat64));
  for (size_t i = 1; i < options.inputs.size(); ++i) {
    const auto other = load_model_file(options.inputs[i], torch::kCPU);
    if (nlohmann::json(other.config) != config) {
      throw std::invalid_argument(options.inputs[i] + ": its architecture differs from " + options.inputs.front() + "'s");
    }
    if (other.tokenizer_proto != first.tokenizer_proto) {
      throw std::invalid_argument(options.inputs[i] + ": its tokenizer differs from " + options.inputs.front() + "'s");
    }
    const auto params = other.model->named_parameters();
    for (size_t p = 0; p < totals.size(); ++p) totals[p] += params[sums[p].key()].to(torch::kFloat64);
  }
  const double count = static_cast<double>(options.inputs.size());
  for (size_t p = 0; p < totals.size(); ++p) sums[p].value().copy_(totals[p] / count);
  save_model_file(options.output, first.model, first.tokenizer_proto);
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
