#include "serve/request_search.h"

#include <algorithm>
#include <string>

namespace tfm {

SearchOptions libre_search(const LibreRequest& request, SearchOptions defaults, int64_t max_beam) {
  if (request.alternatives < 0) throw ApiError(400, "\"alternatives\" must be >= 0");
  if (request.alternatives == 0) return defaults;
  // Compared without adding 1 to it: a client may send any int64, and INT64_MAX + 1 would overflow.
  if (request.alternatives >= max_beam) {
    throw ApiError(400, "\"alternatives\" may be at most " + std::to_string(max_beam - 1));
  }
  defaults.nbest = request.alternatives + 1;
  defaults.beam = std::max(defaults.beam, defaults.nbest);
  return defaults;
}

SearchOptions api_search(const ApiRequest& request, SearchOptions defaults, int64_t max_beam) {
  defaults.beam = request.beam.value_or(defaults.beam);
  defaults.nbest = request.nbest.value_or(std::min(defaults.nbest, defaults.beam));
  defaults.length_penalty = request.length_penalty.value_or(defaults.length_penalty);
  if (defaults.beam < 1 || defaults.beam > max_beam) {
    throw ApiError(400, "\"beam\" must be within 1 and " + std::to_string(max_beam));
  }
  if (defaults.nbest < 1 || defaults.nbest > defaults.beam) {
    throw ApiError(400, "\"nbest\" must be within 1 and the beam");
  }
  if (!(defaults.length_penalty >= 0.0 && defaults.length_penalty <= 10.0)) {
    throw ApiError(400, "\"length_penalty\" must be within 0 and 10");
  }
  return defaults;
}

}  // namespace tfm
