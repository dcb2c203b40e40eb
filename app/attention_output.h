#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "translation/translator.h"
#include "viz/attention_page.h"

namespace tfm {

/// `tfm translate --attention-out DIR`: one page per translated line (DIR/line-N.html, its
/// numbers in DIR/line-N.json, its opening picture in DIR/line-N.svg) and DIR/index.html listing them.
class AttentionPages {
 public:
  /// Creates DIR; throws std::runtime_error when it cannot.
  explicit AttentionPages(std::filesystem::path dir);
  /// Writes the page of input line `line_number` (invalid UTF-8 in it shown as U+FFFD).
  void write(size_t line_number, const std::string& input_line, const std::string& translation,
             const SentenceAttention& attention);
  /// Writes DIR/index.html (pages written so far).
  void finish() const;

 private:
  std::filesystem::path dir_;
  std::vector<std::pair<std::string, AttentionPage>> written_;  // file name, page without its views
};

/// The page's data: cross-attention, then encoder and decoder self-attention, each per layer and head.
AttentionPage make_attention_page(const SentenceAttention& attention, const std::string& title,
                                  const std::string& source, const std::string& translation);

}  // namespace tfm
