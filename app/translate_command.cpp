// `tfm translate`: stdin (or --input) to stdout (or --output), one output line per input line.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "app/attention_output.h"
#include "app/command.h"
#include "app/decoding_options.h"
#include "app/model_loading.h"
#include "app/runtime_options.h"
#include "decode/attention_probe.h"
#include "decode/search_options.h"
#include "text/line_stream.h"
#include "translation/translator.h"

namespace tfm {
namespace {

// The last but one layer, where attention aligns best; a one-layer model's only layer (resolve_layer).
constexpr int64_t kDefaultAlignmentLayer = -2;

struct TranslateOptions {
  std::vector<std::string> models;
  std::string input = "-";
  std::string output = "-";
  std::string format = "text";
  int64_t buffer_size = 0;
  int64_t workers = 0;                               // batches decoded at once (0 = auto)
  std::string attention_out;                         // directory of attention pages (empty = none)
  std::string alignment;                             // "" | hard | soft
  int64_t alignment_layer = kDefaultAlignmentLayer;  // the cross-attention layer alignments come from
  RuntimeOptions runtime;
  DecodingOptions decoding;
};

/// A layer asked for with --alignment-layer must be one of the model's (the default fits any model).
void check_alignment_layer(int64_t layer, int64_t layers) {
  if (layer == kDefaultAlignmentLayer || (layer >= -layers && layer < layers)) return;
  throw std::invalid_argument("--alignment-layer " + std::to_string(layer) + ": the model has " +
                              std::to_string(layers) + " decoder layers (0 to " + std::to_string(layers - 1) +
                              ", or -" + std::to_string(layers) + " to -1 from the end)");
}

/// The best hypothesis's word alignment, when --alignment asks for one.
struct Alignment {
  std::vector<int64_t> hard;  // per hypothesis subword: the source subword it attends to most
  torch::Tensor soft;         // [hypothesis subwords, source subwords], --alignment soft only
};

void write_result(std::ostream& out, const Translation& translation, size_t line_number, const TranslateOptions& o,
                  const Alignment* alignment) {
  if (o.format == "json") {
    nlohmann::json record = {{"line", line_number}, {"translation", translation.text()}};
    if (!translation.nbest.empty()) {
      record["score"] = translation.nbest.front().score;
      record["tokens"] = translation.nbest.front().pieces;
    }
    if (translation.truncated) record["truncated"] = true;
    if (translation.at_max_length) record["max_length_reached"] = true;
    if (alignment != nullptr) {
      record["alignment"] = pharaoh_alignment(alignment->hard);
      if (alignment->soft.defined()) {
        nlohmann::json rows = nlohmann::json::array();
        for (int64_t t = 0; t < alignment->soft.size(0); ++t) {
          nlohmann::json row = nlohmann::json::array();
          for (int64_t s = 0; s < alignment->soft.size(1); ++s) {
            row.push_back(std::round(alignment->soft[t][s].item<double>() * 1e4) / 1e4);
          }
          rows.push_back(std::move(row));
        }
        record["soft_alignment"] = std::move(rows);
      }
    }
    if (o.decoding.translator.search.nbest > 1) {
      record["nbest"] = nlohmann::json::array();
      for (const auto& c : translation.nbest) {
        record["nbest"].push_back({{"translation", c.text}, {"score", c.score}, {"tokens", c.pieces}});
      }
    }
    out << record.dump() << '\n';
  } else if (o.decoding.translator.search.nbest > 1) {
    // Moses/Marian n-best format: one line per alternative, numbered from 0 by input line.
    for (const auto& c : translation.nbest) {
      out << line_number - 1 << " ||| " << c.text << " ||| " << std::fixed << std::setprecision(4) << c.score << '\n';
    }
  } else if (alignment != nullptr) {
    out << translation.text() << " ||| " << pharaoh_alignment(alignment->hard) << '\n';  // Marian's layout
  } else {
    out << translation.text() << '\n';
  }
}

void run_translate(const TranslateOptions& options) {
  if (options.format != "text" && options.format != "json") {
    throw std::invalid_argument("--format " + options.format + ": expected text or json");
  }
  if (options.buffer_size < 0) throw std::invalid_argument("--buffer-size must be >= 0");
  DecodingOptions decoding = options.decoding;
  decoding.translator.workers = batch_workers(options.workers, decoding.translator.max_tokens);
  if (!options.alignment.empty() && options.alignment != "hard" && options.alignment != "soft") {
    throw std::invalid_argument("--alignment " + options.alignment + ": expected hard or soft");
  }
  if (options.alignment == "soft" && options.format != "json") {
    throw std::invalid_argument("--alignment soft: needs --format json (a matrix per sentence)");
  }
  if (!options.alignment.empty() && options.decoding.translator.search.nbest > 1 && options.format != "json") {
    throw std::invalid_argument("--alignment with --nbest: use --format json (the alignment is the best's)");
  }
  Translator translator = open_translator(options.models, decoding, options.runtime);
  if (!options.alignment.empty()) check_alignment_layer(options.alignment_layer, translator.ids().decoder_layers());
  std::optional<AttentionPages> pages;
  if (!options.attention_out.empty()) pages.emplace(options.attention_out);

  LineStream input(options.input);
  std::ofstream file;
  if (options.output != "-") {
    file.open(options.output);
    if (!file) throw std::runtime_error(options.output + ": cannot write");
  }
  std::ostream& out = options.output == "-" ? std::cout : file;
  const size_t chunk = options.buffer_size > 0 ? static_cast<size_t>(options.buffer_size) : 4000;
  const auto start = std::chrono::steady_clock::now();
  size_t sentences = 0;
  for (std::vector<std::string> lines; input.next_chunk(lines, chunk);) {
    const auto translations = translator.translate(lines);
    for (size_t i = 0; i < lines.size(); ++i) {
      const size_t line_number = input.first_line_number() + i;
      if (translations[i].truncated) {
        const int64_t limit = translator.source_limit();
        spdlog::warn(
            "{}:{}: longer than {} subwords ({}); translated its first {} only", input.name(), line_number, limit,
            limit < options.decoding.translator.max_source_len ? "the most the model's learned positions can read"
                                                               : "--max-source-len",
            limit);
      }
      if (translations[i].at_max_length) {
        const SearchOptions& search = options.decoding.translator.search;
        spdlog::warn(
            "{}:{}: the translation has the most subwords the search allows ({}; --max-len-a {:g} * source "
            "+ --max-len-b {}) and may be cut short",
            input.name(), line_number, translations[i].nbest.front().pieces.size(), search.max_len_a, search.max_len_b);
      }
      std::optional<Alignment> alignment;
      if ((pages || !options.alignment.empty())) {
        std::optional<SentenceAttention> attention;
        if (!translations[i].nbest.empty()) attention = translator.attention(translations[i]);
        if (pages && attention) pages->write(line_number, lines[i], translations[i].text(), *attention);
        if (!options.alignment.empty()) {
          alignment.emplace();
          if (attention) {
            alignment->hard = hard_alignment(attention->maps, options.alignment_layer);
            if (options.alignment == "soft") alignment->soft = soft_alignment(attention->maps, options.alignment_layer);
          }
        }
      }
      write_result(out, translations[i], line_number, options, alignment ? &*alignment : nullptr);
    }
    out.flush();
    // Stop at the first chunk that cannot be written (a full disk): not after translating the rest.
    if (!out) throw std::runtime_error((options.output == "-" ? "standard output" : options.output) + ": cannot write");
    sentences += lines.size();
  }
  if (pages) {
    pages->finish();
    spdlog::info("attention pages: {}/index.html", options.attention_out);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("translated {} sentences in {:.2f} s: {:.1f} sentences/s, {:.1f} target subwords/s", sentences, seconds,
               sentences / std::max(seconds, 1e-9), translator.target_tokens() / std::max(seconds, 1e-9));
}

}  // namespace

void add_translate_command(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<TranslateOptions>();
  auto& o = *options;
  CLI::App* cmd = app.add_subcommand("translate", "Translate text with beam search (one output line per input line)");
  cmd->add_option("--model,-m", o.models, "Model file(s) from `tfm train`; several = ensemble")->required();
  cmd->add_option("--input,-i", o.input, "Text to translate (- = stdin, .gz allowed)")->capture_default_str();
  cmd->add_option("--output,-o", o.output, "Where to write translations (- = stdout)")->capture_default_str();
  add_decoding_options(*cmd, o.decoding);
  cmd->add_option("--nbest", o.decoding.translator.search.nbest,
                  "Alternatives per sentence (text: Moses n-best format)")
      ->capture_default_str();
  cmd->add_option("--buffer-size", o.buffer_size,
                  "Lines read before translating (0 = as many as are ready, up to 4000)")
      ->capture_default_str();
  add_batch_workers_option(*cmd, o.workers);
  cmd->add_option("--format", o.format, "text or json (one JSON object per line)")->capture_default_str();
  cmd->add_option("--attention-out", o.attention_out,
                  "Write one HTML page per line to this directory: cross-, encoder and decoder self-attention "
                  "of the best hypothesis, every layer and head (numbers beside it as .json)");
  CLI::Option* alignment =
      cmd->add_option("--alignment", o.alignment,
                      "Word alignment of the best hypothesis: hard (source-target subword pairs, appended as "
                      "' ||| 0-0 1-2' in text, \"alignment\" in json) or soft (json: the attention matrix too)");
  cmd->add_option("--alignment-layer", o.alignment_layer,
                  "Cross-attention layer alignments come from, averaged over heads (negative: from the end)")
      ->capture_default_str()
      ->needs(alignment);
  add_runtime_options(*cmd, o.runtime);
  cmd->callback([options, &action] { action = [options] { run_translate(*options); }; });
}

}  // namespace tfm
