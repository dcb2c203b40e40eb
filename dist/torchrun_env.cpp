#include "dist/torchrun_env.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tfm {
namespace {

/// The variable as an integer in [low, high]; `fallback` when unset (nullopt: it is required).
int read_int(const std::function<const char*(const char*)>& lookup, const char* name, int low, int high,
             std::optional<int> fallback) {
  const char* text = lookup(name);
  if (text == nullptr || *text == '\0') {
    if (fallback) return *fallback;
    throw std::invalid_argument(std::string(name) +
                                " is not set (a multi-process run needs MASTER_ADDR, "
                                "MASTER_PORT, WORLD_SIZE, RANK and LOCAL_RANK, as torchrun sets them)");
  }
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < low || value > high) {
    throw std::invalid_argument(std::string(name) + "=" + text + ": expected an integer from " + std::to_string(low) +
                                " to " + std::to_string(high));
  }
  return static_cast<int>(value);
}

}  // namespace

std::optional<TorchrunEnv> read_torchrun_env(const std::function<const char*(const char*)>& lookup) {
  TorchrunEnv env;
  env.world_size = read_int(lookup, "WORLD_SIZE", 1, 1 << 20, 1);
  if (env.world_size == 1) return std::nullopt;
  env.rank = read_int(lookup, "RANK", 0, env.world_size - 1, std::nullopt);
  env.local_world_size = read_int(lookup, "LOCAL_WORLD_SIZE", 1, env.world_size, 1);
  env.local_rank = read_int(lookup, "LOCAL_RANK", 0, env.world_size - 1, std::nullopt);
  env.master_port = read_int(lookup, "MASTER_PORT", 1, 65535, std::nullopt);
  const char* addr = lookup("MASTER_ADDR");
  if (addr == nullptr || *addr == '\0') {
    throw std::invalid_argument("MASTER_ADDR is not set (the host of rank 0, e.g. 127.0.0.1 on one machine)");
  }
  env.master_addr = addr;
  const char* agent_store = lookup("TORCHELASTIC_USE_AGENT_STORE");
  env.agent_store = agent_store != nullptr && std::string(agent_store) == "True";
  if (env.agent_store) env.restart_count = read_int(lookup, "TORCHELASTIC_RESTART_COUNT", 0, 1 << 20, 0);
  return env;
}

}  // namespace tfm
