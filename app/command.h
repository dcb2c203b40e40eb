#pragma once
#include <functional>
#include <stdexcept>

#include <CLI/CLI.hpp>

namespace tfm {

/// What a subcommand does once the command line is parsed. main() runs it inside one
/// try/catch so every error becomes a one-line message and a documented exit code:
/// std::invalid_argument = usage error, std::runtime_error = input or file error.
using CommandAction = std::function<void()>;

/// Each registers one subcommand under `app` and, when the user picks it, sets `action`.
void add_tokenizer_command(CLI::App& app, CommandAction& action);
void add_prepare_command(CLI::App& app, CommandAction& action);
void add_train_command(CLI::App& app, CommandAction& action);
void add_translate_command(CLI::App& app, CommandAction& action);
void add_eval_command(CLI::App& app, CommandAction& action);
void add_average_command(CLI::App& app, CommandAction& action);
void add_plot_command(CLI::App& app, CommandAction& action);
void add_shortlist_command(CLI::App& app, CommandAction& action);
void add_serve_command(CLI::App& app, CommandAction& action);
void add_quantize_command(CLI::App& app, CommandAction& action);

/// Thrown by a command that stopped on SIGINT/SIGTERM after saving its work (exit code 130).
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tfm
