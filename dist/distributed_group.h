#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "dist/torchrun_env.h"

namespace tfm {

/// A collective failed: a rank exited, or none answered within the timeout. Every rank that sees
/// it stops with this one-line message rather than waiting for ever.
class DistributedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The processes of one training run, joined through PyTorch's own engine (c10d): rank 0 hosts a
/// TCPStore at MASTER_ADDR:MASTER_PORT for the rendezvous, then every rank builds the backend
/// (Gloo on the CPU, NCCL on CUDA). All collectives are blocking and must be called by every rank
/// in the same order, as with torch.distributed.
class DistributedGroup {
 public:
  /// backend: "gloo" or "nccl". timeout bounds the rendezvous and every collective.
  DistributedGroup(const TorchrunEnv& env, const std::string& backend, std::chrono::milliseconds timeout);
  ~DistributedGroup();
  DistributedGroup(const DistributedGroup&) = delete;
  DistributedGroup& operator=(const DistributedGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_main() const { return rank_ == 0; }
  const std::string& backend() const { return backend_name_; }

  /// Sums each tensor over the ranks, in place (all are sent before any is waited for).
  void all_reduce_sum(std::vector<torch::Tensor>& tensors);
  /// Overwrites each tensor with rank 0's.
  void broadcast_from_main(std::vector<torch::Tensor>& tensors);
  /// Returns once every rank has called it.
  void barrier();

 private:
  struct Backend;
  [[noreturn]] void fail(const char* what, const std::exception& error) const;

  int rank_ = 0, size_ = 1;
  std::string backend_name_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Backend> backend_;
};

/// The backend a device uses unless --dist-backend names one: nccl for CUDA, gloo otherwise.
std::string default_backend(const torch::Device& device);

}  // namespace tfm
