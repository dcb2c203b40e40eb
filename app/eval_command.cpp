// Placeholder until the scoring issue lands; replaced by the real `tfm eval`.
#include <stdexcept>

#include "app/command.h"

namespace tfm {

void add_eval_command(CLI::App& app, CommandAction& action) {
  CLI::App* command = app.add_subcommand("eval", "Score translations with BLEU and chrF (not available yet)");
  command->allow_extras();
  command->callback([&action] { action = [] { throw std::logic_error("`tfm eval` is not available yet"); }; });
}

}  // namespace tfm
