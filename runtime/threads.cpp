#include "runtime/threads.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include <torch/utils.h>

namespace tfm {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

int default_threads() {
  // Several processes on one node (torchrun sets LOCAL_WORLD_SIZE) share its cores, as torchrun
  // itself would have them do: otherwise each would run a thread per core, all contending.
  int local_processes = 1;
  if (const char* text = std::getenv("LOCAL_WORLD_SIZE"); text != nullptr)
    local_processes = std::max(1, std::atoi(text));
  return std::max(1, available_cores() / local_processes);
}

int configure_threads(int threads) {
  const int wanted = threads > 0 ? threads : default_threads();
  torch::set_num_threads(wanted);
  return torch::get_num_threads();
}

}  // namespace tfm
