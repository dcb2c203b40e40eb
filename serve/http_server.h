#pragma once
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "serve/batching_queue.h"
#include "serve/served_models.h"
#include "serve/server_metrics.h"
#include "serve/translation_api.h"

namespace httplib {
class Server;
}

namespace tfm {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: a free port, chosen by the system (bind() returns it)
  size_t max_body_bytes = 1 << 20;
  int http_threads = 128;                // connections served at once; each waits on its request, not on a core
  std::chrono::seconds read_timeout{5};  // a client silent this long mid-request loses its connection
  int workers = 1;                       // decoding threads, each taking its own batches (>= 1)
  int cores = 1;                         // decoding threads' cores in all, shared as WorkerCores says
  ApiLimits limits;
  BatchingOptions batching;
};

/// `tfm serve`'s HTTP server (cpp-httplib): POST /translate (LibreTranslate), POST /v1/translate,
/// GET /languages, /health, /ready, /metrics and the page at /. Sentences of concurrent requests are
/// decoded together (BatchingQueue); each refusal is a JSON error with its status; one log line per
/// request.
class TranslationServer {
 public:
  TranslationServer(ServedModels& models, const ServeOptions& options);
  ~TranslationServer();
  TranslationServer(const TranslationServer&) = delete;
  TranslationServer& operator=(const TranslationServer&) = delete;

  /// Binds host:port and returns the port; std::runtime_error when it cannot.
  int bind();
  /// Serves until stop(); then answers every request already received and returns. Decodes on
  /// the calling thread (BatchingQueue::run), and on workers - 1 helpers (run_helper), sharing
  /// the cores as WorkerCores says: call it from the main thread.
  void serve();
  /// Stops accepting connections (thread-safe; a signal watcher calls it). Connections already open
  /// are served until their clients close them or fall idle (the read timeout).
  void stop();

 private:
  void add_routes();
  void add_translate_route(const std::string& path, bool libre);

  ServedModels& models_;
  ServeOptions options_;
  ServerMetrics metrics_;
  BatchingQueue queue_;
  TranslationApi api_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> listen_fd_{-1};
};

}  // namespace tfm
