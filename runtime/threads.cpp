#include "runtime/threads.h"

#include <sched.h>

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

int configure_threads(int threads) {
  const int wanted = threads > 0 ? threads : available_cores();
  torch::set_num_threads(wanted);
  return torch::get_num_threads();
}

}  // namespace tfm
