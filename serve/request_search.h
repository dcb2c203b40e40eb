#pragma once
#include <cstdint>

#include "decode/search_options.h"
#include "serve/api_requests.h"

namespace tfm {

/// The search a request asks for, from the model's defaults. Each throws ApiError 400 naming the
/// field when the request asks for more than `max_beam` (the server's --max-beam) or for settings
/// no search takes; what they return always has 1 <= nbest <= beam <= max(max_beam, default beam).

/// POST /translate: `alternatives` adds that many n-best entries, the beam growing to fit them.
SearchOptions libre_search(const LibreRequest& request, SearchOptions defaults, int64_t max_beam);
/// POST /v1/translate: `beam`, `nbest` (default: the model's, cut to the beam) and `length_penalty`.
SearchOptions api_search(const ApiRequest& request, SearchOptions defaults, int64_t max_beam);

}  // namespace tfm
