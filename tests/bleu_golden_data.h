#pragma once
// sacreBLEU 2.6.0's golden scores in ../shared/testdata/bleu/ (see its README.md): each case
// directory holds hyp.txt, ref.txt (ref2.txt) and expected.json. Shared by the BLEU and chrF tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"
#include "text/segment_reader.h"

namespace tfm::testing {

/// The golden numbers were computed with this version; signatures are compared with it.
constexpr const char* kSacrebleuVersion = "2.6.0";

/// Scores must match sacreBLEU to 0.01; the arithmetic is the same, so we hold them to this.
constexpr double kGoldenTolerance = 1e-9;

inline std::filesystem::path bleu_data_dir() { return data_dir() / "testdata" / "bleu"; }

/// One case directory, its files read the way `tfm eval` reads them.
struct GoldenCase {
  std::string name;
  nlohmann::json expected;
  std::vector<std::string> hyps;
  std::vector<std::vector<std::string>> refs;  // refs[r][i]: reference r of segment i
};

/// Every case directory (sorted by name); each must have an expected.json.
inline std::vector<GoldenCase> load_golden_cases() {
  std::vector<std::filesystem::path> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(bleu_data_dir())) {
    if (entry.is_directory()) dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<GoldenCase> cases;
  for (const auto& dir : dirs) {
    GoldenCase golden;
    golden.name = dir.filename().string();
    std::ifstream in(dir / "expected.json");
    golden.expected = nlohmann::json::parse(in);
    golden.hyps = read_segments((dir / golden.expected.at("hyp_file").get<std::string>()).string());
    for (const auto& ref_file : golden.expected.at("ref_files")) {
      golden.refs.push_back(read_segments((dir / ref_file.get<std::string>()).string()));
    }
    cases.push_back(std::move(golden));
  }
  return cases;
}

/// The largest |actual - expected| seen and where, for the summary a data test prints
/// (a test that compares with a reference shows how close it came, not only that it passed).
struct MaxDifference {
  double value = 0.0;
  std::string where;

  void expect_near(double actual, double expected, const std::string& what) {
    EXPECT_NEAR(actual, expected, kGoldenTolerance) << what;
    const double difference = std::abs(actual - expected);
    if (difference > value || where.empty()) {
      value = difference;
      where = what;
    }
  }
};

}  // namespace tfm::testing
