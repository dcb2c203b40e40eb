#include "app/training_curves.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace tfm {
namespace {

double number(const nlohmann::json& record, const char* key) {
  const auto found = record.find(key);
  return found != record.end() && found->is_number() ? found->get<double>() : std::nan("");
}

}  // namespace

TrainingRun read_training_run(const std::string& path, const std::string& label) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  TrainingRun run{label, {}, {}};
  std::string line;
  for (size_t number_of_line = 1; std::getline(in, line); ++number_of_line) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw std::runtime_error(path + ":" + std::to_string(number_of_line) + ": not a JSON record");
    }
    if (!record.is_object() || !record.contains("type") || !record.contains("update")) {
      throw std::runtime_error(path + ":" + std::to_string(number_of_line) +
                               ": not a metrics.jsonl record (no type or update)");
    }
    TrainingRun::Point point{number(record, "update"), number(record, "elapsed_s") / 60,
                             number(record, "loss"),   number(record, "ppl"),
                             number(record, "lr"),     number(record, "bleu")};
    if (record["type"] == "train") run.train.push_back(point);
    if (record["type"] == "valid") run.valid.push_back(point);
  }
  if (run.train.empty() && run.valid.empty()) throw std::runtime_error(path + ": no training or validation records");
  return run;
}

std::vector<ChartPanel> training_panels(const std::vector<TrainingRun>& runs) {
  using Field = double TrainingRun::Point::*;
  struct Quantity {
    const char* title;
    Field field;
    bool train, valid, log_y;
  };
  const Quantity quantities[] = {
      {"loss (label-smoothed, per target token)", &TrainingRun::Point::loss, true, true, false},
      {"perplexity", &TrainingRun::Point::ppl, true, true, true},
      {"learning rate", &TrainingRun::Point::lr, true, false, false},
      {"validation BLEU", &TrainingRun::Point::bleu, false, true, false}};
  const std::pair<const char*, Field> axes[] = {{"updates", &TrainingRun::Point::update},
                                                {"minutes", &TrainingRun::Point::minutes}};
  std::vector<ChartPanel> panels;
  for (const auto& q : quantities) {
    for (const auto& [axis, field_of_x] : axes) {
      const Field x_field = field_of_x;  // a lambda below uses it: C++17 lambdas cannot capture bindings
      ChartPanel panel{std::string(q.title) + " by " + axis, axis, q.title, {}, q.log_y};
      for (size_t r = 0; r < runs.size(); ++r) {
        const auto add = [&](const std::vector<TrainingRun::Point>& points, const std::string& kind, bool dashed) {
          Series series{runs[r].label + (q.train && q.valid ? " " + kind : ""), {}, {}, static_cast<int>(r), dashed};
          for (const auto& p : points) {
            series.x.push_back(p.*x_field);
            series.y.push_back(p.*(q.field));
          }
          if (!series.x.empty()) panel.series.push_back(std::move(series));
        };
        if (q.train) add(runs[r].train, "train", false);
        if (q.valid) add(runs[r].valid, "valid", true);
      }
      panels.push_back(std::move(panel));
    }
  }
  return panels;
}

nlohmann::json training_json(const std::vector<TrainingRun>& runs) {
  nlohmann::json out = nlohmann::json::array();
  const auto points = [](const std::vector<TrainingRun::Point>& list, bool valid) {
    nlohmann::json array = nlohmann::json::array();
    for (const auto& p : list) {
      nlohmann::json point = {{"update", p.update}, {"minutes", p.minutes}, {"loss", p.loss}, {"ppl", p.ppl}};
      if (valid) {
        point["bleu"] = p.bleu;
      } else {
        point["lr"] = p.lr;
      }
      array.push_back(std::move(point));
    }
    return array;
  };
  for (const auto& run : runs) {
    out.push_back({{"label", run.label}, {"train", points(run.train, false)}, {"valid", points(run.valid, true)}});
  }
  return out;
}

}  // namespace tfm
