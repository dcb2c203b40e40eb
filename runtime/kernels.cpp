#include "runtime/kernels.h"

#include <atomic>

namespace tfm {
namespace {
std::atomic<bool> use_fused{true};
}  // namespace

void set_fused_kernels(bool fused) { use_fused.store(fused); }
bool fused_kernels() { return use_fused.load(); }

}  // namespace tfm
