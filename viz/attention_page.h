#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "viz/matrix.h"

namespace tfm {

/// One kind of attention of one sentence pair, every layer and head: rows are queries.
struct AttentionView {
  std::string key;    // "cross", "encoder" or "decoder" (the page's selector values)
  std::string title;  // "cross-attention (encoder-decoder)"...
  std::string row_axis, col_axis;
  std::vector<std::string> row_labels, col_labels;  // subword pieces
  std::vector<std::vector<Matrix>> heads;           // [layer][head]: [rows, cols]
};

/// What one attention page shows: a translated sentence and its attention views.
struct AttentionPage {
  std::string title;                 // "line 3"
  std::string source, translation;   // the texts
  std::vector<AttentionView> views;  // the first is shown first
};

/// The numbers behind the page: {title, source, translation, views: [{key, title, row_labels,
/// col_labels, layers: [[head matrix as rows of weights]]}]}.
nlohmann::json attention_json(const AttentionPage& page);

/// A self-contained page (inline SVG and script, nothing fetched; well-formed XML as well as
/// HTML): a layer/head selector over every view and a head-average per layer. Each view's last
/// layer, averaged over heads, is drawn in the page itself (readable without the script, and
/// every subword label is in the markup); the script redraws the selected one.
std::string attention_html(const AttentionPage& page);

/// A view's last layer averaged over its heads, as an <svg> element: the page opens with the
/// first view's, and shows the others' below the selector (as a file: svg_document(...)).
std::string attention_svg(const AttentionPage& page, size_t view = 0);

/// The index of a directory of pages: one link per page, with its source and translation.
std::string attention_index_html(const std::vector<std::pair<std::string, AttentionPage>>& pages);

}  // namespace tfm
