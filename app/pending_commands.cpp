// `tfm train` is registered so the command's shape is fixed, but it does not work yet: the
// training issue builds it. Running it says so plainly.
#include <stdexcept>
#include <string>

#include "app/command.h"

namespace tfm {
namespace {

void add_pending(CLI::App& app, CommandAction& action, const std::string& name, const std::string& description) {
  CLI::App* command = app.add_subcommand(name, description + " (not available yet in this version)");
  command->allow_extras();
  command->callback([&action, name] {
    action = [name] {
      throw std::logic_error("`tfm " + name + "` is not available yet in this version of tfm");
    };
  });
}

}  // namespace

void add_train_command(CLI::App& app, CommandAction& action) {
  add_pending(app, action, "train", "Train a Transformer on a parallel corpus");
}

}  // namespace tfm
