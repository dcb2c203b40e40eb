#include "runtime/random_states.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace tfm {
namespace {

TEST(KeepRandomStates, DrawsInsideTheScopeDoNotChangeTheDrawsAfterIt) {
  torch::manual_seed(7);
  const auto expected = torch::rand({16});
  torch::manual_seed(7);
  {
    const KeepRandomStates kept;
    torch::rand({1000});  // what validation's random initialisation would take
  }
  EXPECT_TRUE(torch::equal(torch::rand({16}), expected));
}

TEST(KeepRandomStates, CpuStateRoundTrips) {
  torch::manual_seed(11);
  const auto state = cpu_random_state();
  const auto first = torch::randn({8});
  set_cpu_random_state(state);
  EXPECT_TRUE(torch::equal(torch::randn({8}), first));
  EXPECT_EQ(cuda_random_states().size(), torch::cuda::is_available() ? torch::cuda::device_count() : 0U);
}

}  // namespace
}  // namespace tfm
