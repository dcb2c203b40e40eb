// tfm: Transformer neural machine translation on LibTorch. The program over the layer libraries:
// parse the command line, set up logging and threads, run one subcommand, map errors to exit codes.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "app/command.h"
#include "app/error_report.h"
#include "app/exit_codes.h"
#include "app/flag_names.h"
#include "model/small_rows_product.h"
#include "runtime/allocator.h"
#include "runtime/capabilities.h"
#include "runtime/errors.h"
#include "runtime/kernels.h"
#include "runtime/onednn_cache.h"
#include "runtime/process_exit.h"
#include "runtime/threads.h"

// jemalloc's options (runtime/allocator.h).
extern "C" {
const char* malloc_conf = tfm::kJemallocOptions;
}

namespace {

struct GlobalOptions {
  std::string log_level = "info";
  int threads = 0;
  bool plain_kernels = false;
};

void set_up_logging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("tfm");
  logger->set_pattern("[%Y-%m-%d %H:%M:%S] %^%l%$ %v");
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

int fail(const CLI::App& app, int code, const std::string& message) {
  std::string command = "tfm";
  for (const CLI::App* sub = &app; sub != nullptr;) {
    const auto chosen = sub->get_subcommands();
    sub = chosen.empty() ? nullptr : chosen.front();
    if (sub != nullptr) command += " " + sub->get_name();
  }
  std::cerr << command << ": error: " << message << "\n";
  return code;
}

/// Every way out once the command line is read: the logs flushed and LIBXSMM's exit work done,
/// then the process ends without LibTorch's static teardown (runtime/process_exit.h).
[[noreturn]] void leave(int code) {
  spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& logger) { logger->flush(); });
  tfm::finish_small_rows_kernels();
  tfm::exit_without_teardown(code);
}

}  // namespace

int main(int argc, char** argv) {
  tfm::bound_onednn_primitive_cache();  // before anything reaches LibTorch's kernels
  tfm::bound_ideep_computation_cache();
  tfm::spell_options_as_flags();
  CLI::App app{"tfm: Transformer neural machine translation (Vaswani et al., 2017) on LibTorch", "tfm"};
  app.require_subcommand(1);
  app.set_version_flag(
      "--version",
      [] {
        auto text = tfm::describe(tfm::probe_capabilities());
        text.pop_back();
        return text;
      },
      "Print tfm's and LibTorch's versions and whether CUDA and bf16 are usable here");
  app.set_config("--config", "",
                 "Read options from a TOML/INI file ([train], [translate] ... sections); "
                 "command-line flags override it");
  GlobalOptions global;
  app.add_option("--log-level", global.log_level, "trace, debug, info, warn, error or off (logs go to stderr)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
  app.add_option("--threads", global.threads, "CPU threads for LibTorch (0 = all cores)")
      ->check(CLI::Range(0, tfm::kMostThreads))
      ->capture_default_str();
  app.add_flag("--plain-kernels", global.plain_kernels,
               "Run the paper's operations one by one (explicit attention, plain loss and Adam) instead of "
               "fused kernels: the reference the fast path is tested and benchmarked against");

  tfm::CommandAction action;
  tfm::add_tokenizer_command(app, action);
  tfm::add_prepare_command(app, action);
  tfm::add_train_command(app, action);
  tfm::add_translate_command(app, action);
  tfm::add_eval_command(app, action);
  tfm::add_average_command(app, action);
  tfm::add_shortlist_command(app, action);
  tfm::add_quantize_command(app, action);
  tfm::add_serve_command(app, action);
  tfm::add_plot_command(app, action);
  for (CLI::App* sub : app.get_subcommands({})) sub->fallthrough();  // global flags after the command

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    leave(app.exit(e));  // --help, --version: print to stdout, exit 0
  } catch (const CLI::ParseError& e) {
    leave(fail(app, tfm::kExitUsageError, tfm::message_of(e) + " (see --help)"));
  }

  set_up_logging(global.log_level);
  try {
    const int threads = tfm::configure_threads(global.threads);
    spdlog::debug("LibTorch intra-op threads: {}", threads);
    tfm::set_fused_kernels(!global.plain_kernels);
    action();
    // Results that never reached stdout (a full disk) must not end as a success.
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
      throw std::runtime_error("standard output: cannot write");
    }
  } catch (...) {
    const tfm::ErrorReport report = tfm::report_error(std::current_exception());
    leave(fail(app, report.exit_code, report.message));
  }
  leave(tfm::kExitOk);
}
