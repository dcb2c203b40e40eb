#pragma once
// What the batch-1 decoding benchmarks under bench/ share: their source lines and their
// translators' options (built on demand, never by tests).
#include <ATen/Parallel.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/precision.h"
#include "translation/translator.h"

namespace tfm::bench {

/// The first `count` lines of `path`.
inline std::vector<std::string> first_lines(const std::string& path, size_t count) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; lines.size() < count && std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// What MODEL SOURCE [LINES] [DTYPE] [THREADS] (argv[1] to argv[5]) ask of a batch-1 benchmark.
struct BatchOneArguments {
  std::vector<std::string> lines;  // SOURCE's first LINES (100)
  std::string dtype;               // DTYPE (float32)
  int threads = 1;                 // THREADS (`default_threads`), set as LibTorch's
};

inline BatchOneArguments batch_one_arguments(int argc, char** argv, int default_threads) {
  BatchOneArguments arguments;
  arguments.lines = first_lines(argv[2], argc > 3 ? std::stoul(argv[3]) : 100);
  arguments.dtype = argc > 4 ? argv[4] : "float32";
  arguments.threads = argc > 5 ? std::stoi(argv[5]) : default_threads;
  at::set_num_threads(arguments.threads);
  return arguments;
}

/// `tfm translate`'s options (beam 4) at speed.sh's length penalty, in `dtype`: float32,
/// bfloat16, or int8 (float32 with int8 linear layers, `--quantize int8`).
inline TranslatorOptions decoding_options(const std::string& dtype) {
  TranslatorOptions options;
  options.search.length_penalty = 0.6;
  options.quantize_int8 = dtype == "int8";
  options.precision = parse_precision(options.quantize_int8 ? "float32" : dtype);
  return options;
}

/// A benchmark's main: run(argc, argv)'s exit code, or 1 after printing its exception.
template <typename Run>
int main_of(int argc, char** argv, Run run) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}

}  // namespace tfm::bench
