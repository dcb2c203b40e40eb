#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "data/batch_split.h"
#include "data/batching.h"
#include "model/loss.h"
#include "model/model_config.h"
#include "runtime/task_thread.h"

namespace tfm {

/// How many sub-batches --sub-batches N gives with `threads` intra-op threads: on the CPU, N itself
/// when N >= 1 and for 0 (auto) 2 with two or more threads, else 1; on any other device 1.
int64_t resolve_sub_batches(int64_t requested, bool cpu, int threads);

/// A training step's multiply-adds per source and per target position of `config`, forward (the
/// backward is twice each): the encoder's layers and the decoder's cross-attention keys and values
/// per source position; the decoder's layers and the output layer per target position. Attention
/// scores (length x d_model a position) are left out: at sentence lengths they are a few percent.
TokenCosts token_costs(const ModelConfig& config);

/// One batch's loss and gradients computed as `parts` sub-batches side by side on the CPU
/// (split_batch: rows grouped by target length, so the parts carry less padding than the batch),
/// like Marian's CPU worker threads but within one update: part 0 on the calling
/// thread, the others each on a long-lived TaskThread, the intra-op threads shared out among them.
/// One team of threads per step waits at every fork and join of every op, while the calling
/// thread alone dispatches ops and runs autograd; threads of their own keep both cores busy with
/// the other part's work meanwhile.
///
/// The update is the one the whole batch gives (gradients are sums over tokens), to rounding:
/// part 0's backward accumulates into the parameters' gradients, then the other parts' gradients
/// are added in part order, so the bits do not depend on timing. Each part draws its dropout
/// masks from a seed taken in part order from LibTorch's default generator (DropoutSeedScope),
/// so a seed and its saved state still repeat a run.

class SubBatches {
 public:
  /// parts >= 2; `threads`: the intra-op threads to share out (at least one a part); `costs`: how
  /// the batch is cut (split_batch).
  SubBatches(int64_t parts, int threads, const TokenCosts& costs = {});
  ~SubBatches();

  int64_t parts() const { return parts_; }

  /// `loss_of(part)`: one part's forward and loss (autocast is the callee's); its backward runs
  /// here. -> the batch's summed loss and nll.
  LossSums run(const Batch& batch, const std::vector<torch::Tensor>& parameters,
               const std::function<LossSums(const Batch&)>& loss_of);

 private:
  int64_t parts_;
  TokenCosts costs_;
  std::vector<int> team_;                             // intra-op threads of each part
  int calling_team_;                                  // the calling thread's, restored after each batch
  std::vector<std::unique_ptr<TaskThread>> threads_;  // parts 1 ..
};

}  // namespace tfm
