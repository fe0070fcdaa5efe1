// When a pointing was observed, from its integrations, against sums done by hand: the
// RMTable's epoch (the median), int_time (time on source) and obs_interval.
#include <gtest/gtest.h>

#include <cmath>

#include "spip/ms/observing_time.hpp"

namespace spip::ms {
namespace {

TEST(ObservingTime, IsBlankWithoutIntegrations) {
  const ObservingTime time = observing_time({});
  EXPECT_TRUE(std::isnan(time.start_mjd_s) && std::isnan(time.end_mjd_s) && std::isnan(time.median_mjd_s) &&
              std::isnan(time.on_source_s));
}

// Two windows observed at once share their time stamps, which count once; a gap is not
// on source; the median of an even count lies between the middle two.
TEST(ObservingTime, CountsSharedIntegrationsOnceAndLeavesGapsOut) {
  std::vector<Integration> integrations;
  for (int window = 0; window < 2; ++window)
    for (double mid : {5.0, 15.0, 25.0, 105.0}) integrations.push_back({1000 + mid, 10});
  const ObservingTime time = observing_time(integrations);
  EXPECT_DOUBLE_EQ(time.start_mjd_s, 1000);
  EXPECT_DOUBLE_EQ(time.end_mjd_s, 1110);
  EXPECT_DOUBLE_EQ(time.median_mjd_s, 1020);  // (15 + 25) / 2 after 1000
  EXPECT_DOUBLE_EQ(time.on_source_s, 40);     // 0-30 and 100-110
}

// An integration that spans others (a long dump of a second array beside short ones)
// begins the stretch they share; the time is covered once.
TEST(ObservingTime, CoversNestedAndOverlappingIntegrationsOnce) {
  const ObservingTime time = observing_time({{10, 2}, {20, 2}, {21, 30}, {40, 4}, {60, 2}});
  // [9, 11], [19, 21], [6, 36], [38, 42], [59, 61]: [6, 36] holds the first two.
  EXPECT_DOUBLE_EQ(time.start_mjd_s, 6);
  EXPECT_DOUBLE_EQ(time.end_mjd_s, 61);
  EXPECT_DOUBLE_EQ(time.median_mjd_s, 21);
  EXPECT_DOUBLE_EQ(time.on_source_s, 30 + 4 + 2);
}

// One TIME given with two INTERVALs (windows dumped differently) keeps the longer; an
// MS without INTERVAL (0) says nothing of the time on source.
TEST(ObservingTime, KeepsTheLongerIntervalOfATimeAndNoTimeOnSourceWithoutIntervals) {
  const ObservingTime time = observing_time({{100, 2}, {100, 10}, {200, 2}});
  EXPECT_DOUBLE_EQ(time.start_mjd_s, 95);
  EXPECT_DOUBLE_EQ(time.on_source_s, 12);
  const ObservingTime unknown = observing_time({{100, 0}, {200, 0}});
  EXPECT_DOUBLE_EQ(unknown.median_mjd_s, 150);
  EXPECT_TRUE(std::isnan(unknown.on_source_s));
}

}  // namespace
}  // namespace spip::ms
