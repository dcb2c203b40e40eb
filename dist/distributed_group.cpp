#include "dist/distributed_group.h"

#include <spdlog/spdlog.h>

#include <csignal>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "dist/backend_factory.h"
#include "runtime/errors.h"
#include "text/option_names.h"

namespace tfm {

struct DistributedGroup::Backend {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> backend;
};

std::string default_backend(const torch::Device& device) { return device.is_cuda() ? "nccl" : "gloo"; }

DistributedGroup::DistributedGroup(const TorchrunEnv& env, const std::string& backend,
                                   std::chrono::milliseconds timeout)
    : rank_(env.rank),
      size_(env.world_size),
      backend_name_(backend),
      timeout_(timeout),
      backend_(std::make_unique<Backend>()) {
  if (backend != "gloo" && backend != "nccl") {
    throw std::invalid_argument(option_name("dist_backend") + " " + backend + ": expected gloo or nccl");
  }
  // Gloo sends with writev, which raises SIGPIPE when the peer has gone; that signal would end this
  // rank silently, with no error and no exit code of its own. Ignored, as Python ignores it under
  // torch.distributed, the write fails with EPIPE and the collective throws DistributedError.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    // torchrun's contract: rank 0 serves the store at MASTER_ADDR:MASTER_PORT and waits for the
    // others, which retry their connection until the timeout; under torchrun's agent, the agent
    // serves it and every rank connects.
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(env.master_port);
    store_options.isServer = env.rank == 0 && !env.agent_store;
    store_options.numWorkers = static_cast<size_t>(env.world_size);
    store_options.waitWorkers = true;
    store_options.timeout = timeout;
    auto tcp = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
    const std::string prefix = env.agent_store ? "/worker/attempt_" + std::to_string(env.restart_count) + "/" : "";
    backend_->store = c10::make_intrusive<c10d::PrefixStore>(prefix + "tfm/" + backend, tcp);
    backend_->backend = backend == "gloo" ? make_gloo_backend(backend_->store, rank_, size_, timeout)
                                          : make_nccl_backend(backend_->store, rank_, size_, timeout);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& error) {
    throw DistributedError("rank " + std::to_string(rank_) + ": cannot join the " + std::to_string(size_) +
                           "-process group at " + env.master_addr + ":" + std::to_string(env.master_port) + " within " +
                           option_name("dist_timeout") + ": " + message_of(error));
  }
  spdlog::info("distributed: rank {} of {}, {} backend, rendezvous at {}:{}", rank_, size_, backend, env.master_addr,
               env.master_port);
}

DistributedGroup::~DistributedGroup() = default;

void DistributedGroup::fail(const char* what, const std::exception& error) const {
  throw DistributedError("rank " + std::to_string(rank_) + ": " + what + " failed (another rank exited, or " +
                         "none answered within " + option_name("dist_timeout") + " " +
                         std::to_string(timeout_.count() / 1000) + " s): " + message_of(error));
}

void DistributedGroup::all_reduce_sum(std::vector<torch::Tensor>& tensors) {
  try {
    // One collective per tensor, all in flight before the first wait: Gloo's worker threads and
    // NCCL's stream work through them while the next are queued.
    std::vector<c10::intrusive_ptr<c10d::Work>> pending;
    for (auto& tensor : tensors) {
      std::vector<at::Tensor> one{tensor};
      pending.push_back(backend_->backend->allreduce(one, c10d::AllreduceOptions{}));
    }
    for (auto& work : pending) work->wait(timeout_);
  } catch (const std::exception& error) {
    fail("all-reduce", error);
  }
}

void DistributedGroup::broadcast_from_main(std::vector<torch::Tensor>& tensors) {
  try {
    std::vector<c10::intrusive_ptr<c10d::Work>> pending;
    for (auto& tensor : tensors) {
      std::vector<at::Tensor> one{tensor};
      pending.push_back(backend_->backend->broadcast(one, c10d::BroadcastOptions{}));
    }
    for (auto& work : pending) work->wait(timeout_);
  } catch (const std::exception& error) {
    fail("broadcast", error);
  }
}

void DistributedGroup::barrier() {
  try {
    backend_->backend->barrier(c10d::BarrierOptions{})->wait(timeout_);
  } catch (const std::exception& error) {
    fail("barrier", error);
  }
}

}  // namespace tfm
