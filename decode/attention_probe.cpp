#include "decode/attention_probe.h"

#include <algorithm>
#include <string>

#include <torch/torch.h>

#include "text/special_ids.h"

namespace tfm {
namespace {

std::vector<torch::Tensor> first_of_batch(const std::vector<torch::Tensor>& layers) {
  std::vector<torch::Tensor> out;
  for (const auto& weights : layers) out.push_back(weights[0].to(torch::kCPU, torch::kFloat32).contiguous());
  return out;
}

}  // namespace

AttentionMaps probe_attention(Transformer& model, const std::vector<int64_t>& source_ids,
                              const std::vector<int64_t>& hypothesis_ids, const torch::Device& device) {
  std::vector<int64_t> source = source_ids, target_in{kBosId};
  source.push_back(kEosId);
  target_in.insert(target_in.end(), hypothesis_ids.begin(), hypothesis_ids.end());

  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  const auto as_row = [&device](const std::vector<int64_t>& ids) {
    return torch::tensor(ids, torch::kLong).view({1, -1}).to(device);  // [1, L]
  };
  AttentionMaps maps;
  model->forward(as_row(source), as_row(target_in), &maps);
  model->train(was_training);
  AttentionMaps result;
  result.encoder_self = first_of_batch(maps.encoder_self);
  result.decoder_self = first_of_batch(maps.decoder_self);
  result.cross = first_of_batch(maps.cross);
  return result;
}

int64_t resolve_layer(int64_t layer, int64_t layers) {
  const int64_t index = layer < 0 ? layers + layer : layer;
  return std::clamp<int64_t>(index, 0, layers - 1);
}

torch::Tensor soft_alignment(const AttentionMaps& maps, int64_t layer) {
  const auto& cross = maps.cross.at(static_cast<size_t>(resolve_layer(layer, static_cast<int64_t>(maps.cross.size()))));
  // [H, T, S] -> [T-1, S-1]: without the </s> row (predicted after the last subword) and column
  return cross.mean(0).slice(0, 0, cross.size(1) - 1).slice(1, 0, cross.size(2) - 1);
}

std::vector<int64_t> hard_alignment(const AttentionMaps& maps, int64_t layer) {
  const auto soft = soft_alignment(maps, layer);  // [T-1, S-1]
  std::vector<int64_t> links(static_cast<size_t>(soft.size(0)), -1);
  if (soft.size(1) == 0) return links;
  const auto best = soft.argmax(1);
  for (int64_t t = 0; t < soft.size(0); ++t) links[static_cast<size_t>(t)] = best[t].item<int64_t>();
  return links;
}

std::string pharaoh_alignment(const std::vector<int64_t>& links) {
  std::string text;
  for (size_t t = 0; t < links.size(); ++t) {
    if (links[t] < 0) continue;
    if (!text.empty()) text += ' ';
    text += std::to_string(links[t]) + "-" + std::to_string(t);
  }
  return text;
}

}  // namespace tfm
