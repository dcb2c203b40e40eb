#pragma once
#include <string>

#include <torch/types.h>

namespace tfm {

/// Turns a --device value into a torch::Device.
/// Accepts "cpu", "cuda", "cuda:N" and "auto" (CUDA device 0 when one is usable, else CPU).
/// Throws std::invalid_argument for a malformed value or for CUDA on a machine without it.
torch::Device resolve_device(const std::string& spec);

}  // namespace tfm
