// `tfm serve`: translation over HTTP (serve/), one or several models, batching across requests.
#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>

#include "app/command.h"
#include "app/decoding_options.h"
#include "app/model_loading.h"
#include "app/runtime_options.h"
#include "app/stop_signal.h"
#include "decode/search_options.h"
#include "model/packed_weight.h"
#include "runtime/allocator.h"
#include "runtime/onednn_cache.h"
#include "serve/http_server.h"
#include "serve/served_models.h"
#include "serve/worker_cores.h"

namespace tfm {
namespace {

struct ServeCommandOptions {
  std::vector<std::string> models;  // FILE or SRC-TGT=FILE
  ServeOptions server;
  double batch_wait_ms = 5.0;
  double request_timeout = 30.0;  // seconds
  int64_t read_timeout = 5;       // seconds
  std::vector<std::string> api_keys;
  std::string api_key_file;
  int64_t max_queue_sentences = 10000;
  RuntimeOptions runtime;
  DecodingOptions decoding;
};

/// "en-de=model.pt" -> {"en", "de", "model.pt"}; "model.pt" -> {"", "", "model.pt"}.
struct ModelSpec {
  std::string source, target, path;
};
ModelSpec parse_model_spec(const std::string& spec) {
  const auto equals = spec.find('=');
  if (equals == std::string::npos) return {"", "", spec};
  const std::string pair = spec.substr(0, equals);
  const auto dash = pair.find('-');
  // Codes go into every JSON answer (GET /languages): letters, digits and '_' ("en", "pt_BR").
  const bool codes = std::all_of(pair.begin(), pair.end(), [](char c) {
    return c == '-' || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
  if (!codes || dash == std::string::npos || dash == 0 || dash + 1 == pair.size() ||
      pair.find('-', dash + 1) != std::string::npos) {
    throw std::invalid_argument("--model " + spec +
                                ": name the pair as SRC-TGT=FILE, codes of ASCII letters, digits and _ "
                                "(e.g. en-de=model.pt)");
  }
  return {pair.substr(0, dash), pair.substr(dash + 1), spec.substr(equals + 1)};
}

std::vector<std::string> read_api_keys(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the --api-key-file");
  std::vector<std::string> keys;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty() && line.front() != '#') keys.push_back(line);
  }
  if (keys.empty()) throw std::runtime_error(path + ": no API key in the --api-key-file");
  return keys;
}

void validate(const ServeCommandOptions& o) {
  for (const auto& spec : o.models) parse_model_spec(spec);  // before anything is logged or loaded
  if (o.server.port < 0 || o.server.port > 65535) throw std::invalid_argument("--port must be within 0 and 65535");
  // An empty key (an unset variable) would match no request: every one refused 403.
  for (const auto& key : o.api_keys) {
    if (key.empty()) throw std::invalid_argument("--api-key is empty (an unset variable?)");
  }
  // An empty host (an unset variable in `--host "$HOST"`) would listen on every interface.
  if (o.server.host.empty()) {
    throw std::invalid_argument("--host is empty: name an address (127.0.0.1; 0.0.0.0 or :: for every interface)");
  }
  // Durations become std::chrono counts added to clock readings: bounded, so that they cannot overflow.
  constexpr double kDay = 86400;
  if (!(o.request_timeout > 0 && o.request_timeout <= kDay)) {
    throw std::invalid_argument("--request-timeout must be > 0 and at most 86400 seconds (a day)");
  }
  if (!(o.batch_wait_ms >= 0 && o.batch_wait_ms <= kDay * 1000)) {
    throw std::invalid_argument("--batch-wait-ms must be >= 0 and at most a day");
  }
  if (o.server.max_body_bytes < 1) throw std::invalid_argument("--max-body-bytes must be >= 1");
  if (o.server.limits.max_sentences_per_request < 1)
    throw std::invalid_argument("--max-sentences-per-request must be >= 1");
  if (o.max_queue_sentences < o.server.limits.max_sentences_per_request) {
    throw std::invalid_argument("--max-queue-sentences must be >= --max-sentences-per-request");
  }
  if (o.server.http_threads < 1) throw std::invalid_argument("--http-threads must be >= 1");
  if (o.read_timeout < 1 || o.read_timeout > kDay) {
    throw std::invalid_argument("--read-timeout must be within 1 and 86400 seconds (a day)");
  }
  if (o.server.workers < 0) throw std::invalid_argument("--workers must be >= 0 (0: one per core)");
  if (o.server.limits.max_beam < 1 || o.server.limits.max_beam > kLargestBeam) {
    throw std::invalid_argument("--max-beam must be within 1 and " + std::to_string(kLargestBeam));
  }
  // A request that names no beam decodes with --beam, and POST /v1/translate holds every beam to --max-beam.
  if (o.decoding.translator.search.beam > o.server.limits.max_beam) {
    throw std::invalid_argument("--beam (" + std::to_string(o.decoding.translator.search.beam) +
                                ") must be <= --max-beam (" + std::to_string(o.server.limits.max_beam) + ")");
  }
}

void run_serve(ServeCommandOptions o) {
  validate(o);
  for (const auto& key : o.api_keys) o.server.limits.api_keys.push_back(key);
  if (!o.api_key_file.empty()) {
    for (const auto& key : read_api_keys(o.api_key_file)) o.server.limits.api_keys.push_back(key);
  }
  o.server.batching.max_tokens = o.decoding.translator.max_tokens;
  o.server.batching.batch_wait = std::chrono::microseconds(static_cast<int64_t>(o.batch_wait_ms * 1000));
  o.server.batching.max_queue_sentences = o.max_queue_sentences;
  o.server.limits.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.request_timeout * 1000));
  o.server.read_timeout = std::chrono::seconds(o.read_timeout);
  o.server.cores = at::get_num_threads();  // --threads, all cores by default
  if (o.server.workers == 0) o.server.workers = o.server.cores;
  if (o.server.workers > 1) {
    // Small batches leave a second thread of one batch idle at every step, while two batches on a
    // thread each keep both cores busy; a lone request still has every core (WorkerCores).
    const WorkerCores cores(o.server.cores, o.server.workers);
    spdlog::info("decoding: {} workers x {} thread{}; the main one on {} while the others idle", o.server.workers,
                 cores.helper_threads(), cores.helper_threads() == 1 ? "" : "s", cores.main_threads_alone());
  }
  // Before anything is loaded: oneDNN sizes its cache at its first primitive.
  widen_onednn_primitive_cache(kServingPrimitiveCacheCapacity);
  PackedWeight::set_row_padding(true);
  std::vector<ServedModel> served;
  for (const auto& spec : o.models) {
    ModelSpec parsed = parse_model_spec(spec);
    served.push_back({parsed.source, parsed.target,
                      std::make_unique<Translator>(open_translator({parsed.path}, o.decoding, o.runtime))});
  }
  ServedModels models(std::move(served));
  release_free_memory();
  // A server's batches change shape with its load: freed pages go back after a second instead of
  // each size class keeping its peak (BENCHMARKS.md, tfm serve).
  return_freed_memory_after(1000);
  TranslationServer server(models, o.server);
  StopSignal signals;
  const int port = server.bind();
  std::string names;
  for (size_t m = 0; m < models.size(); ++m) names += (m ? ", " : "") + models.model(m).name();
  spdlog::info("listening on http://{}:{} ({})", o.server.host, port, names);
  std::thread watcher([&] {
    if (const int signal = signals.wait(); signal != 0) {
      spdlog::info("signal {}: no new connections; answering the requests received, then exiting", signal);
      server.stop();
    }
  });
  server.serve();
  signals.cancel();
  watcher.join();
  spdlog::info("stopped");
}

}  // namespace

void add_serve_command(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<ServeCommandOptions>();
  auto& o = *options;
  CLI::App* cmd = app.add_subcommand("serve",
                                     "Translate over HTTP (LibreTranslate's API and tfm's own), "
                                     "batching sentences across requests");
  cmd->add_option("--model,-m", o.models,
                  "Model file, or SRC-TGT=FILE to serve it for that pair; repeat for several pairs")
      ->required();
  cmd->add_option("--host", o.server.host, "Address to listen on (0.0.0.0 or :: for every interface)")
      ->capture_default_str();
  cmd->add_option("--port", o.server.port, "Port to listen on (0 = any free port; the log says which)")
      ->capture_default_str();
  add_decoding_options(*cmd, o.decoding, "Decoding");
  cmd->add_option("--batch-wait-ms", o.batch_wait_ms,
                  "Longest a batch waits for sentences of other requests on their way (never when none are)")
      ->capture_default_str();
  cmd->add_option("--max-body-bytes", o.server.max_body_bytes, "Larger bodies are refused (413)")
      ->capture_default_str();
  cmd->add_option("--max-sentences-per-request", o.server.limits.max_sentences_per_request,
                  "More sentences in one request are refused (413)")
      ->capture_default_str();
  cmd->add_option("--max-queue-sentences", o.max_queue_sentences,
                  "Sentences waiting at most; a request that does not fit is refused (503, Retry-After)")
      ->capture_default_str();
  cmd->add_option("--request-timeout", o.request_timeout,
                  "Seconds a request may wait for its translation before it is answered 504")
      ->capture_default_str();
  cmd->add_option("--max-beam", o.server.limits.max_beam, "Largest beam (and n-best) a request may ask for")
      ->capture_default_str();
  cmd->add_option("--api-key", o.api_keys,
                  "Requests must carry this key (api_key, or Authorization: Bearer); "
                  "repeat for several");
  cmd->add_option("--api-key-file", o.api_key_file, "File of API keys, one per line (# comments)");
  cmd->add_option("--read-timeout", o.read_timeout,
                  "Seconds a client may stay silent mid-request (or idle between requests) before its "
                  "connection is closed")
      ->capture_default_str();
  o.server.workers = 0;  // one per core
  cmd->add_option("--workers", o.server.workers,
                  "Decoding threads, each taking batches of its own and --threads / N cores; 0: one per core "
                  "(under concurrent load small batches keep a core each busy, and a lone request still "
                  "decodes on every core)")
      ->capture_default_str();
  cmd->add_flag("--continuous-batching", o.server.batching.join_running,
                "Sentences of new requests join the running batch between its steps instead of waiting "
                "for it to end (slower on the CPU so far: BENCHMARKS.md)");
  cmd->add_option("--http-threads", o.server.http_threads,
                  "Connections served at once (each waits on its request, not on a core)")
      ->capture_default_str();
  add_runtime_options(*cmd, o.runtime);
  cmd->callback([options, &action] { action = [options] { run_serve(*options); }; });
}

}  // namespace tfm
