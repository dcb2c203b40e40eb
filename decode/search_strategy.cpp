#include "decode/search_strategy.h"

#include "decode/beam_search.h"
#include "decode/greedy_search.h"
#include "decode/sampling_search.h"

namespace tfm {

std::unique_ptr<SearchStrategy> make_search_strategy(const SearchOptions& options) {
  validate(options);
  if (options.sampling.enabled) return std::make_unique<SamplingSearch>(options);
  if (options.beam == 1 && options.nbest == 1) return std::make_unique<GreedySearch>(options);
  return std::make_unique<BeamSearch>(options);
}

}  // namespace tfm
