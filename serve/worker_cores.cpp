#include "serve/worker_cores.h"

#include <algorithm>

namespace tfm {

WorkerCores::WorkerCores(int cores, int workers)
    : cores_(std::max(1, cores)), helper_threads_(std::max(1, cores_ / std::max(1, workers))) {}

int WorkerCores::main_threads(size_t busy_helpers) const {
  if (helper_threads_ > 1) return helper_threads_;
  return std::max(1, cores_ - static_cast<int>(busy_helpers));
}

}  // namespace tfm
