#pragma once

namespace tfm {

/// Which kernels the model runs. Fused (the default): scaled dot-product attention through
/// LibTorch's fused SDPA kernel, the loss through log_softmax + nll_loss, Adam through the
/// multi-tensor fused step. Plain: the paper's operations one by one, as a PyTorch user writes
/// them (explicit scores, masked softmax, dropout, matmul): the reference the fused path is tested
/// and benchmarked against. Process-wide, like LibTorch's own kernel switches; set it before
/// building models (`tfm --plain-kernels`, or tests).
void set_fused_kernels(bool fused);
bool fused_kernels();

}  // namespace tfm
