#pragma once
// sacreBLEU's reproducibility signatures: every option that changes a score, in a fixed order,
// so a number can be quoted with exactly how it was computed. tfm writes its own version in the
// `version` field (e.g. `version:tfm-0.1.0`), because the numbers come from tfm's code.
#include <cstddef>
#include <string>

#include "metrics/bleu.h"
#include "metrics/chrf.h"

namespace tfm {

/// "tfm-" followed by the version of this build, e.g. "tfm-0.1.0".
std::string signature_version();

/// e.g. "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:tfm-0.1.0"; floor and add-k carry
/// their value with two decimals ("smooth:floor[0.10]").
std::string bleu_signature(const BleuOptions& options, size_t num_refs,
                           const std::string& version = signature_version());

/// e.g. "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:tfm-0.1.0".
std::string chrf_signature(const ChrfOptions& options, size_t num_refs,
                           const std::string& version = signature_version());

}  // namespace tfm
