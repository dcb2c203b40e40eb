#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "model/cache_slots.h"
#include "model/shortlist_columns.h"

namespace tfm {

/// Keys and values one decoder layer keeps between incremental steps.
struct LayerCache {
  // [capacity, W, H, Dh], positions 0..step-1 filled: preallocated and written in place, one
  // position per step, a step's N rows into rows 0..N-1 (W >= N). On the CPU, reorders move no
  // keys: DecoderState::cache_slots says which row holds a hypothesis's position; so a copy of a
  // state shares its caches. Elsewhere a reorder copies the filled positions into new buffers.
  torch::Tensor self_k, self_v;
  // [stored, H, S, Dh]: encoder output projected once; the rows DecoderState::memory_slots says
  torch::Tensor memory_k, memory_v;
  // The dtype the self-attention keys and values are stored in; unset: the one they are computed in.
  std::optional<torch::Dtype> stored_dtype;

  /// Writes this step's key and value (each [N, H, 1, Dh]) at position `step`, growing the
  /// buffers when full, and returns the keys and values of positions 0..step as [W, H, step+1, Dh]
  /// views (no copy): row n's are in row cache_slots.slot(n, t) at position t.
  std::pair<torch::Tensor, torch::Tensor> append(const torch::Tensor& k, const torch::Tensor& v, int64_t step);
};

/// Everything incremental decoding carries from one step to the next. Rows are hypotheses
/// (N = sentences x beam); beam search reorders, repeats or drops rows with reorder().
struct DecoderState {
  std::vector<LayerCache> layers;
  // Which cache row holds each row's key and value at each position (every layer alike); identity
  // until a reorder on the CPU.
  CacheSlots cache_slots;
  // Which stored encoder output (row of every layer's memory_k and memory_v) each memory row reads,
  // alike at every position; identity until a sentence leaves the batch on the CPU. Its rows are
  // memory_bias's.
  CacheSlots memory_slots;
  // [M, 1, 1, S] in the model's dtype: 0 for real source tokens, -inf for padding, added to the
  // cross-attention scores (model/attention.h: attention_weights)
  torch::Tensor memory_bias;
  int64_t step = 0;  // cache positions written so far (the next token's cache position)
  // Where each row's sentence began: its tokens lie at cache positions row_starts[n] .. step-1,
  // and its next token is its own position step - row_starts[n]. Sentences that joined a running
  // batch (append()) begin later than 0. Empty while every row begins at 0.
  std::vector<int64_t> row_starts;
  // Rows per encoder output: row r reads memory r / rows_per_memory (memory_k, memory_v and
  // memory_bias have M = N / rows_per_memory rows). Beam search's K hypotheses of a sentence share
  // one copy of its encoder output instead of K.
  int64_t rows_per_memory = 1;
  // A shortlist's lists, one per encoder output (model/shortlist_columns.h): step() scores row r
  // over list r / rows_per_memory only. Undefined: the whole vocabulary.
  ShortlistColumns output_columns;

  /// Each row becomes `times` consecutive rows (row i -> rows i*times .. i*times+times-1), sharing
  /// its encoder output; the memory is not copied.
  void repeat_rows(int64_t times);

  /// Keeps rows `rows` ([N'] int64 indices into the current rows, repeats allowed), in that order.
  /// `same_memory`: every new row reads the encoder output its old row read (beam search moving
  /// hypotheses among one sentence's beams), so the memory keys, values and mask, identical across
  /// those rows, need no copy: at each step that saves copying [N, H, S, Dh] per layer twice.
  /// With rows_per_memory K > 1, `rows` must come in blocks of K rows that read one memory (beam
  /// search keeps each sentence's K hypotheses together); this is checked. On the CPU a sentence
  /// leaving copies no memory keys or values either: memory_slots records which stored rows are
  /// still read, and they are gathered into tensors of their own once no more than half are.
  void reorder(const torch::Tensor& rows, bool same_memory = false);

  /// Continuous batching: the rows of `other` (started for other sentences by
  /// TransformerImpl::start_decoding and repeated alike, not stepped yet) join after this state's
  /// rows and begin at position `step`; a row's translation is the one it gets decoded alone.
  /// Encoder outputs are padded to the longer source; the caches keep only the positions that a
  /// row still reads. Shortlists are padded to the longer one.
  void append(DecoderState other);

  /// Before a step: when the self-attention caches are full, moves the rows still decoding into
  /// buffers with room for the next positions (their capacity grows), dropping the rows of
  /// finished sentences, whose positions reorders leave in place; the table is reset.
  void make_room_for_step();

  /// Rows: N.
  int64_t rows() const;
  /// Each row's position of its next token (step when every row began at 0): N entries.
  std::vector<int64_t> next_positions() const;
};

}  // namespace tfm
