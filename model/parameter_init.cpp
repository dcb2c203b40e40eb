#include "model/parameter_init.h"

namespace tfm {
namespace {

thread_local bool skipping = false;

}  // namespace

SkipParameterInit::SkipParameterInit() : previous_(skipping) { skipping = true; }

SkipParameterInit::~SkipParameterInit() { skipping = previous_; }

bool parameter_init_skipped() { return skipping; }

}  // namespace tfm
