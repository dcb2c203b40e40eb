// `tfm translate`: stdin (or --input) to stdout (or --output), one output line per input line.
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "app/command.h"
#include "app/decoding_options.h"
#include "app/model_loading.h"
#include "app/runtime_options.h"
#include "text/line_stream.h"
#include "decode/translator.h"

namespace tfm {
namespace {

struct TranslateOptions {
  std::vector<std::string> models;
  std::string input = "-";
  std::string output = "-";
  std::string format = "text";
  int64_t buffer_size = 0;
  RuntimeOptions runtime;
  DecodingOptions decoding;
};

void write_result(std::ostream& out, const Translation& translation, size_t line_number, const TranslateOptions& o) {
  if (o.format == "json") {
    nlohmann::json record = {{"line", line_number}, {"translation", translation.text()}};
    if (!translation.nbest.empty()) {
      record["score"] = translation.nbest.front().score;
      record["tokens"] = translation.nbest.front().pieces;
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
  } else {
    out << translation.text() << '\n';
  }
}

void run_translate(const TranslateOptions& options) {
  if (options.format != "text" && options.format != "json") {
    throw std::invalid_argument("--format " + options.format + ": expected text or json");
  }
  if (options.buffer_size < 0) throw std::invalid_argument("--buffer-size must be >= 0");
  Translator translator = open_translator(options.models, options.decoding, options.runtime);

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
        spdlog::warn("{}:{}: longer than --max-source-len {} subwords; translated its beginning only",
                     input.name(), line_number, options.decoding.translator.max_source_len);
      }
      write_result(out, translations[i], line_number, options);
    }
    out.flush();
    sentences += lines.size();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("translated {} sentences in {:.2f} s: {:.1f} sentences/s, {:.1f} target subwords/s", sentences,
               seconds, sentences / std::max(seconds, 1e-9), translator.target_tokens() / std::max(seconds, 1e-9));
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
  cmd->add_option("--nbest", o.decoding.translator.search.nbest, "Alternatives per sentence (text: Moses n-best format)")
      ->capture_default_str();
  cmd->add_option("--buffer-size", o.buffer_size,
                  "Lines read before translating (0 = as many as are ready, up to 4000)")
      ->capture_default_str();
  cmd->add_option("--format", o.format, "text or json (one JSON object per line)")->capture_default_str();
  add_runtime_options(*cmd, o.runtime);
  cmd->callback([options, &action] { action = [options] { run_translate(*options); }; });
}

}  // namespace tfm
