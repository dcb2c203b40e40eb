#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "viz/line_chart.h"

namespace tfm {

/// One run's records from `tfm train`'s metrics.jsonl.
struct TrainingRun {
  std::string label;
  struct Point {
    double update = 0, minutes = 0, loss = 0, ppl = 0, lr = 0, bleu = 0;
  };
  std::vector<Point> train, valid;  // bleu: valid only; lr: train only
};

/// Reads metrics.jsonl; throws std::runtime_error naming the file and line of a bad record.
TrainingRun read_training_run(const std::string& path, const std::string& label);

/// Loss, perplexity, learning rate and validation BLEU, against updates (left) and minutes
/// (right): eight panels, every run in its own colour, validation dashed.
std::vector<ChartPanel> training_panels(const std::vector<TrainingRun>& runs);

/// The numbers behind the panels: [{label, train: [{update, minutes, loss, ppl, lr}], valid: [...]}].
nlohmann::json training_json(const std::vector<TrainingRun>& runs);

}  // namespace tfm
