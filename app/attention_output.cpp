#include "app/attention_output.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include <torch/torch.h>

#include "app/tensor_matrix.h"
#include "text/unicode_text.h"
#include "viz/heatmap.h"

namespace tfm {
namespace {

/// Per layer [H, rows, cols] -> [layer][head] matrices
std::vector<std::vector<Matrix>> per_head(const std::vector<torch::Tensor>& layers) {
  std::vector<std::vector<Matrix>> out;
  for (const auto& layer : layers) {
    std::vector<Matrix> heads;
    for (int64_t h = 0; h < layer.size(0); ++h) heads.push_back(to_matrix(layer[h]));
    out.push_back(std::move(heads));
  }
  return out;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out.flush()) throw std::runtime_error(path.string() + ": cannot write");
}

}  // namespace

AttentionPage make_attention_page(const SentenceAttention& a, const std::string& title, const std::string& source,
                                  const std::string& translation) {
  AttentionPage page{title, source, translation, {}};
  page.views.push_back({"cross", "cross-attention (decoder over encoder)", "target (the subword each row predicts)",
                        "source", a.target_outputs, a.source_pieces, per_head(a.maps.cross)});
  page.views.push_back({"encoder", "encoder self-attention", "source", "source", a.source_pieces, a.source_pieces,
                        per_head(a.maps.encoder_self)});
  page.views.push_back({"decoder", "decoder self-attention (masked)", "target (the subword each row predicts)",
                        "target input", a.target_outputs, a.target_inputs, per_head(a.maps.decoder_self)});
  return page;
}

AttentionPages::AttentionPages(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error || !std::filesystem::is_directory(dir_)) {
    throw std::runtime_error(dir_.string() + ": cannot create the --attention-out directory");
  }
}

void AttentionPages::write(size_t line_number, const std::string& input_line, const std::string& translation,
                           const SentenceAttention& attention) {
  // The input line as the model read it: its invalid bytes as U+FFFD, as JSON and HTML need.
  const std::string source = replace_invalid_utf8(input_line);
  char stem[32];
  std::snprintf(stem, sizeof(stem), "line-%06zu", line_number);
  const auto page = make_attention_page(attention, "line " + std::to_string(line_number), source, translation);
  write_file(dir_ / (std::string(stem) + ".html"), attention_html(page));
  write_file(dir_ / (std::string(stem) + ".json"), attention_json(page).dump() + "\n");
  write_file(dir_ / (std::string(stem) + ".svg"), svg_document(attention_svg(page)));
  written_.push_back({std::string(stem) + ".html", AttentionPage{page.title, source, translation, {}}});
}

void AttentionPages::finish() const { write_file(dir_ / "index.html", attention_index_html(written_)); }

}  // namespace tfm
