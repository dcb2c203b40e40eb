#include "serve/request_search.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>

#include "tests/serve/api_error_support.h"

namespace tfm {
namespace {

constexpr int64_t kMaxBeam = 16;

using testing::status_of;

TEST(LibreSearch, AlternativesWidenTheBeamToFitTheNBest) {
  LibreRequest request;
  const SearchOptions defaults;  // beam 4, n-best 1
  EXPECT_EQ(libre_search(request, defaults, kMaxBeam).nbest, 1);
  request.alternatives = 2;
  const auto three = libre_search(request, defaults, kMaxBeam);
  EXPECT_EQ(three.nbest, 3);
  EXPECT_EQ(three.beam, 4);
  request.alternatives = 7;
  const auto eight = libre_search(request, defaults, kMaxBeam);
  EXPECT_EQ(eight.nbest, 8);
  EXPECT_EQ(eight.beam, 8);
  request.alternatives = kMaxBeam - 1;
  EXPECT_EQ(libre_search(request, defaults, kMaxBeam).beam, kMaxBeam);
}

TEST(LibreSearch, AlternativesPastTheLargestBeamAre400EvenAtTheLargestInteger) {
  LibreRequest request;
  for (const int64_t alternatives : {kMaxBeam, int64_t{1} << 40, std::numeric_limits<int64_t>::max(), int64_t{-1},
                                     std::numeric_limits<int64_t>::min()}) {
    request.alternatives = alternatives;
    EXPECT_EQ(status_of([&] { libre_search(request, SearchOptions{}, kMaxBeam); }), 400) << alternatives;
  }
}

TEST(ApiSearch, TakesTheRequestsSettingsWithinTheLimits) {
  ApiRequest request;
  SearchOptions defaults;
  defaults.nbest = 3;
  const auto same = api_search(request, defaults, kMaxBeam);
  EXPECT_EQ(same.beam, 4);
  EXPECT_EQ(same.nbest, 3);
  request.beam = 2;  // the default n-best is cut to a narrower beam rather than refused
  EXPECT_EQ(api_search(request, defaults, kMaxBeam).nbest, 2);
  request.nbest = 2;
  request.length_penalty = 0.0;
  const auto asked = api_search(request, defaults, kMaxBeam);
  EXPECT_EQ(asked.beam, 2);
  EXPECT_EQ(asked.nbest, 2);
  EXPECT_EQ(asked.length_penalty, 0.0);
}

TEST(ApiSearch, SettingsNoSearchTakesAre400) {
  const auto status = [](std::optional<int64_t> beam, std::optional<int64_t> nbest, std::optional<double> penalty) {
    ApiRequest request;
    request.beam = beam;
    request.nbest = nbest;
    request.length_penalty = penalty;
    return status_of([&] { api_search(request, SearchOptions{}, kMaxBeam); });
  };
  EXPECT_EQ(status(kMaxBeam, kMaxBeam, 10.0), 0);
  EXPECT_EQ(status(0, {}, {}), 400);
  EXPECT_EQ(status(kMaxBeam + 1, {}, {}), 400);
  EXPECT_EQ(status(std::numeric_limits<int64_t>::max(), {}, {}), 400);
  EXPECT_EQ(status(std::numeric_limits<int64_t>::min(), {}, {}), 400);
  EXPECT_EQ(status(4, 5, {}), 400);
  EXPECT_EQ(status(4, 0, {}), 400);
  EXPECT_EQ(status({}, {}, -0.1), 400);
  EXPECT_EQ(status({}, {}, 10.5), 400);
  EXPECT_EQ(status({}, {}, std::numeric_limits<double>::quiet_NaN()), 400);
  EXPECT_EQ(status({}, {}, std::numeric_limits<double>::infinity()), 400);
}

}  // namespace
}  // namespace tfm
