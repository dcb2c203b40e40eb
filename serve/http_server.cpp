#include "serve/http_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>

#include "runtime/threads.h"
#include "serve/web_page.h"
#include "serve/worker_cores.h"

namespace tfm {
namespace {

/// What the log line and /metrics need of the request this thread is answering (cpp-httplib
/// answers a connection on one thread, from routing to the logger).
struct RequestTrace {
  std::chrono::steady_clock::time_point arrived;
  int64_t sentences = 0;
  bool started = false;
};
thread_local RequestTrace trace;

const char* const kJson = "application/json";

void send_error(httplib::Response& res, const ApiError& error) {
  res.status = error.status();
  if (error.retry_after_seconds() > 0) res.set_header("Retry-After", std::to_string(error.retry_after_seconds()));
  res.set_content(error_json(error.what()), kJson);
}

/// The key a client sent in a header: "Authorization: Bearer KEY" or "X-API-Key: KEY".
std::string header_key(const httplib::Request& req) {
  const std::string authorization = req.get_header_value("Authorization");
  const std::string bearer = "Bearer ";
  if (authorization.rfind(bearer, 0) == 0) return authorization.substr(bearer.size());
  return req.get_header_value("X-API-Key");
}

RequestBody body_of(const httplib::Request& req) {
  RequestBody body{req.get_header_value("Content-Type"), req.body, {req.params.begin(), req.params.end()}};
  for (const auto& [name, file] : req.files) body.form.emplace(name, file.content);  // multipart/form-data
  return body;
}

/// A client's method or path as it goes into the log: control bytes escaped and at most 256 bytes
/// kept, so that a request stays one log line of bounded length whatever it sent (cpp-httplib
/// decodes the path, so "%0A" would otherwise start a forged line).
std::string loggable(const std::string& text) {
  constexpr size_t kKept = 256;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kKept; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20 || byte == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += {'\\', 'x', kHex[byte >> 4], kHex[byte & 15]};
    } else {
      out += text[i];
    }
  }
  if (text.size() > kKept) out += "...";
  return out;
}

/// The path as a metrics label: the routes by name, anything else as "other" (bounded cardinality).
std::string path_label(const std::string& path) {
  for (const char* route : {"/", "/translate", "/v1/translate", "/languages", "/health", "/ready", "/metrics"}) {
    if (path == route) return path;
  }
  return "other";
}

std::string status_message(int status, size_t max_body_bytes) {
  switch (status) {
    case 404:
      return "no such endpoint (POST /translate, POST /v1/translate, GET /languages, /health, /ready, /metrics)";
    case 405: return "method not allowed here";
    case 413: return "the body is larger than the server's --max-body-bytes (" + std::to_string(max_body_bytes) + ")";
    default: return "the request was refused (HTTP " + std::to_string(status) + ")";
  }
}

}  // namespace

TranslationServer::TranslationServer(ServedModels& models, const ServeOptions& options)
    : models_(models),
      options_(options),
      queue_(
          [&models](size_t lane, std::vector<std::vector<int64_t>> sources, const std::vector<bool>& alignment) {
            return models.decode(lane, std::move(sources), alignment);
          },
          options.batching, [this](const BatchReport& report) { metrics_.batch_decoded(report); },
          // Running batches answer each sentence as it finishes, joined by others or not.
          [&models](size_t lane) { return models.open_stream(lane); }),
      api_(models, queue_, metrics_, options.limits),
      http_(std::make_unique<httplib::Server>()) {
  const int threads = options_.http_threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_read_timeout(options_.read_timeout);
  http_->set_write_timeout(options_.read_timeout);
  http_->set_keep_alive_max_count(1000);
  http_->set_keep_alive_timeout(options_.read_timeout.count());
  // The listening socket, so that stop() can end accept() alone: shutting it down ends the accept
  // loop while connections already open are served to their end (Server::stop() would drop the
  // requests waiting on open keep-alive connections).
  http_->set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    // Inherited by every accepted connection: without it a response's header and body wait
    // on each other (Nagle against delayed ACKs), ~40 ms per request.
    const int yes = 1;
    ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    listen_fd_ = static_cast<int>(sock);
  });
  add_routes();
}

TranslationServer::~TranslationServer() { stop(); }

int TranslationServer::bind() {
  std::string host = options_.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const int port = options_.port == 0 ? http_->bind_to_any_port(host)
                                      : (http_->bind_to_port(host, options_.port) ? options_.port : -1);
  if (port < 0) {
    throw std::runtime_error("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                             " (in use, or not an address of this machine)");
  }
  // cpp-httplib 0.11 listens with a queue of 5 connections not yet accepted: a burst of clients
  // connecting at once (more than 5 while the accept loop was busy) overflowed it, and the kernel
  // reset some of them. Listening again only resizes the queue, here to the kernel's largest
  // (net.core.somaxconn).
  if (::listen(listen_fd_.load(), SOMAXCONN) != 0) {
    throw std::runtime_error("cannot listen on " + options_.host + ":" + std::to_string(port) + ": " +
                             std::strerror(errno));
  }
  return port;
}

void TranslationServer::serve() {
  std::thread http([this] {
    http_->listen_after_bind();  // returns once stopped and every connection's thread is done
    queue_.finish();
  });
  const WorkerCores cores(options_.cores, options_.workers);
  std::vector<std::thread> helpers;
  for (int w = 1; w < options_.workers; ++w) {
    helpers.emplace_back([this, &cores] {
      configure_threads(cores.helper_threads());
      queue_.run_helper();
    });
  }
  if (options_.workers > 1) {
    queue_.share_cores([&cores](size_t busy_helpers) {
      // Unchanged most steps; a change only sets this thread's team size for its next region.
      const int threads = cores.main_threads(busy_helpers);
      if (threads != at::get_num_threads()) configure_threads(threads);
    });
  }
  configure_threads(cores.main_threads_alone());
  queue_.run();  // decoding stays on this (the main) thread, and on the helpers
  for (auto& helper : helpers) helper.join();
  http.join();
}

void TranslationServer::stop() {
  stopping_ = true;
  const int fd = listen_fd_.exchange(-1);
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);  // accept() fails, the accept loop ends
}

void TranslationServer::add_routes() {
  http_->set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    trace = {std::chrono::steady_clock::now(), 0, true};
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = trace.started ? std::chrono::duration<double>(now - trace.arrived).count() : 0.0;
    metrics_.request_done(path_label(req.path), res.status, seconds);
    spdlog::info("{} {} {} {} sentences {:.1f} ms", loggable(req.method), loggable(req.path), res.status,
                 trace.sentences, seconds * 1e3);
    trace = {};
  });
  http_->set_error_handler([this](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) res.set_content(error_json(status_message(res.status, options_.max_body_bytes)), kJson);
  });
  http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
    res.status = 500;
    std::string message = "internal error";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      message = e.what();
    } catch (...) {
    }
    spdlog::error("{}", message);
    res.set_content(error_json(message), kJson);
  });
  http_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(web_page(), "text/html; charset=utf-8");
  });
  http_->Get("/health",
             [](const httplib::Request&, httplib::Response& res) { res.set_content(R"({"status":"ok"})", kJson); });
  http_->Get("/ready", [this](const httplib::Request&, httplib::Response& res) {
    nlohmann::json names = nlohmann::json::array();
    for (size_t m = 0; m < models_.size(); ++m) names.push_back(models_.model(m).name());
    res.status = stopping_ ? 503 : 200;
    res.set_content(dump_json({{"status", stopping_ ? "stopping" : "ready"}, {"models", names}}), kJson);
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(queue_.queued_sentences(), models_.lanes()), "text/plain; version=0.0.4");
  });
  http_->Get("/languages", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(models_.languages_json(), kJson);
  });
  add_translate_route("/translate", true);
  add_translate_route("/v1/translate", false);
}

void TranslationServer::add_translate_route(const std::string& path, bool libre) {
  http_->Post(path, [this, libre](const httplib::Request& req, httplib::Response& res) {
    try {
      const RequestBody body = body_of(req);
      const std::string answer = libre ? api_.translate_libre(body, header_key(req), trace.arrived, trace.sentences)
                                       : api_.translate_v1(body, header_key(req), trace.arrived, trace.sentences);
      res.set_content(answer, kJson);
      if (stopping_) res.set_header("Connection", "close");  // no further requests on this connection
    } catch (const ApiError& error) {
      send_error(res, error);
    }
  });
}

}  // namespace tfm
