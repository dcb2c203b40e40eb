#pragma once
#include <cstdint>
#include <string>

#include <torch/types.h>

#include "dist/distributed_group.h"
#include "model/transformer.h"
#include "train/checkpoint.h"

namespace tfm {

/// Data parallelism, at the start: throws unless every rank starts from the same place (update,
/// epoch, batch, training pairs, tokenizer), then gives every rank rank 0's parameters.
void join_ranks(DistributedGroup& group, Transformer& model, const TrainingProgress& progress, int64_t training_pairs,
                const std::string& tokenizer, const torch::Device& device);

/// Data parallelism: InternalError unless the parameters are bit-identical on every rank.
void verify_replicas(DistributedGroup& group, Transformer& model, int64_t update);

}  // namespace tfm
