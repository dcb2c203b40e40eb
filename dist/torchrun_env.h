#pragma once
#include <functional>
#include <optional>
#include <string>

namespace tfm {

/// Who this process is in a multi-process run, read from the environment variables that torchrun
/// (and torch.distributed's env:// initialisation) set, so tfm launches the way PyTorch users
/// already launch: one process per device, on every node.
struct TorchrunEnv {
  std::string master_addr;   // MASTER_ADDR: where rank 0 listens for the rendezvous
  int master_port = 0;       // MASTER_PORT
  int world_size = 1;        // WORLD_SIZE: processes in all
  int rank = 0;              // RANK: this process, 0..WORLD_SIZE-1; rank 0 writes checkpoints and logs
  int local_rank = 0;        // LOCAL_RANK: this process on its node; picks cuda:LOCAL_RANK
  int local_world_size = 1;  // LOCAL_WORLD_SIZE: processes on this node (default: 1)
  // torchrun's agent already serves the store at MASTER_ADDR:MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE=True): every rank is then a client, under the agent's
  // per-restart prefix (TORCHELASTIC_RESTART_COUNT), as torch.distributed does.
  bool agent_store = false;
  int restart_count = 0;
};

/// The run's place in a multi-process job; nullopt for one process (WORLD_SIZE unset or 1).
/// Throws std::invalid_argument naming the variable when one is missing or malformed.
/// `lookup` reads a variable (std::getenv by default; tests pass their own).
std::optional<TorchrunEnv> read_torchrun_env(const std::function<const char*(const char*)>& lookup =
                                                 [](const char* name) { return std::getenv(name); });

}  // namespace tfm
