// `tfm plot`: training curves from metrics.jsonl, or a model's positional encoding, as SVG, a
// self-contained HTML page, or the numbers as JSON. Drawn by hand-written SVG (viz/): the pictures
// are line charts and heat maps, a few hundred lines, where a plotting library would add a
// dependency and still need this code to feed it; the output opens offline in any browser.
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/command.h"
#include "app/position_maps.h"
#include "app/training_curves.h"
#include "model/model_file.h"
#include "text/unicode_text.h"
#include "viz/heatmap.h"
#include "viz/line_chart.h"
#include "viz/svg.h"

namespace tfm {
namespace {

struct PlotOptions {
  std::vector<std::string> metrics;  // metrics.jsonl files
  std::vector<std::string> labels;   // one per metrics file (default: its directory's name)
  bool positions = false;
  std::string model;
  int64_t max_position = 64;
  std::string out;
  std::string format;  // svg | html | json; default: from --out's extension
};

std::string format_of(const PlotOptions& o) {
  if (!o.format.empty()) return o.format;
  const auto extension = std::filesystem::path(o.out).extension().string();
  if (extension == ".svg" || extension == ".html" || extension == ".json") return extension.substr(1);
  throw std::invalid_argument("--out " + o.out + ": name it .svg, .html or .json, or give --format");
}

void write_output(const PlotOptions& o, const std::string& format, const std::string& svg,
                  const nlohmann::json& numbers, const std::string& title) {
  std::string text;
  if (format == "json") {
    text = numbers.dump(1) + "\n";
  } else if (format == "html") {
    text =
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta "
        "charset=\"utf-8\"/>\n"
        "<title>" +
        xml_escape(title) + "</title>\n</head>\n<body>\n" + svg + "</body>\n</html>\n";
  } else {
    text = svg_document(svg);
  }
  std::ofstream out(o.out, std::ios::binary);
  out << text;
  if (!out.flush()) throw std::runtime_error(o.out + ": cannot write");
  spdlog::info("wrote {} ({})", o.out, format);
}

void plot_metrics(const PlotOptions& o, const std::string& format) {
  if (!o.labels.empty() && o.labels.size() != o.metrics.size()) {
    throw std::invalid_argument("--labels: give one per --metrics file (" + std::to_string(o.metrics.size()) + ")");
  }
  std::vector<TrainingRun> runs;
  for (size_t i = 0; i < o.metrics.size(); ++i) {
    const auto path = std::filesystem::absolute(o.metrics[i]);
    runs.push_back(
        // Labels go into SVG, HTML and JSON, which need UTF-8; a directory name need not be.
        read_training_run(o.metrics[i], replace_invalid_utf8(o.labels.empty() ? path.parent_path().filename().string()
                                                                              : o.labels[i])));
  }
  const std::string title = "training curves: " + std::to_string(runs.size()) + " run" + (runs.size() > 1 ? "s" : "");
  write_output(o, format, format == "json" ? "" : line_charts(training_panels(runs), 2, title), training_json(runs),
               title);
}

void plot_positions(const PlotOptions& o, const std::string& format) {
  auto model = load_model_file(o.model, torch::kCPU).model;
  const auto maps = position_maps(model, o.max_position);
  const std::string kind = maps.sinusoidal ? "sinusoidal" : "learned";
  HeatMapOptions encoding;
  encoding.title = kind + " positional encoding (d_model " + std::to_string(maps.d_model) + ")";
  encoding.row_axis = "position";
  encoding.col_axis = "dimension (even: sin, odd: cos)";
  encoding.diverging = true;
  encoding.cell_width = std::max(1.0, std::min(8.0, 1024.0 / static_cast<double>(maps.encoding.cols)));
  encoding.cell_height = 6;
  HeatMapOptions dot;
  dot.title = std::string(maps.sinusoidal ? "PE(p) . PE(q) / (d_model / 2): a function of p - q"
                                          : "PE(p) . PE(q) / its largest value");
  dot.row_axis = dot.col_axis = "position";
  dot.diverging = true;
  dot.cell_width = dot.cell_height = 6;
  const std::string svg = format == "json"
                              ? ""
                              : stacked({{heat_map(maps.encoding, encoding), heat_map_size(maps.encoding, encoding)},
                                         {heat_map(maps.dot, dot), heat_map_size(maps.dot, dot)}});
  const auto rows = [](const Matrix& m) {
    nlohmann::json out = nlohmann::json::array();
    for (int64_t r = 0; r < m.rows; ++r) {
      nlohmann::json row = nlohmann::json::array();
      for (int64_t c = 0; c < m.cols; ++c) row.push_back(std::round(m.at(r, c) * 1e5) / 1e5);
      out.push_back(std::move(row));
    }
    return out;
  };
  const nlohmann::json numbers = {{"kind", kind},
                                  {"d_model", maps.d_model},
                                  {"positions", maps.encoding.rows},
                                  {"encoding", rows(maps.encoding)},
                                  {"normalised_dot_products", rows(maps.dot)}};
  write_output(o, format, svg, numbers, encoding.title);
}

void run_plot(const PlotOptions& o) {
  if (o.positions == !o.metrics.empty()) {
    throw std::invalid_argument("give either --metrics FILE... (training curves) or --positions --model M.pt");
  }
  if (o.positions && o.model.empty()) throw std::invalid_argument("--positions needs --model M.pt");
  // The dot-product map has a cell per pair of positions: 2048 makes a 60 MB file in ~0.6 GB.
  constexpr int64_t kMostPositions = 2048;
  if (o.max_position < 2 || o.max_position > kMostPositions) {
    throw std::invalid_argument("--max-position " + std::to_string(o.max_position) + ": must be within 2 and " +
                                std::to_string(kMostPositions) + " (the picture has a cell per pair of positions)");
  }
  const std::string format = format_of(o);
  if (format != "svg" && format != "html" && format != "json") {
    throw std::invalid_argument("--format " + format + ": expected svg, html or json");
  }
  if (o.positions) {
    plot_positions(o, format);
  } else {
    plot_metrics(o, format);
  }
}

}  // namespace

void add_plot_command(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<PlotOptions>();
  auto& o = *options;
  CLI::App* cmd = app.add_subcommand(
      "plot", "Draw training curves (--metrics) or a model's positional encoding (--positions) as SVG, HTML or JSON");
  cmd->add_option("--metrics", o.metrics, "metrics.jsonl of one or more `tfm train` runs (one plot, labelled)");
  cmd->add_option("--labels", o.labels, "A label per --metrics file (default: its directory's name)");
  cmd->add_flag("--positions", o.positions, "Draw the model's positional encoding and its dot products instead");
  cmd->add_option("--model,-m", o.model, "Model file, for --positions");
  cmd->add_option("--max-position", o.max_position, "Positions to draw, for --positions")->capture_default_str();
  cmd->add_option("--out,-o", o.out, "File to write: .svg, .html or .json")->required();
  cmd->add_option("--format", o.format, "svg, html or json (default: from --out's extension)");
  cmd->callback([options, &action] { action = [options] { run_plot(*options); }; });
}

}  // namespace tfm
