#pragma once
#include <string>
#include <vector>

#include "model/model_file.h"

namespace tfm {

/// §6.1: the element-wise mean of the parameters of several checkpoints of one run (same
/// architecture and tokenizer; std::invalid_argument naming the file otherwise). Summed in
/// float64 so many checkpoints average without rounding drift. Returns a model on the CPU.
LoadedModel average_checkpoints(const std::vector<std::string>& paths);

}  // namespace tfm
