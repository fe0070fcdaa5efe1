#include "spip/ms/observing_time.hpp"

#include <algorithm>

namespace spip::ms {
namespace {

double begin_of(const Integration& t) { return t.mid_mjd_s - 0.5 * t.length_s; }
double end_of(const Integration& t) { return t.mid_mjd_s + 0.5 * t.length_s; }

// The time the integrations cover, each stretch once: merged in order of their beginnings.
double covered_s(std::vector<Integration> integrations) {
  std::sort(integrations.begin(), integrations.end(),
            [](const Integration& a, const Integration& b) { return begin_of(a) < begin_of(b); });
  double covered = 0, span_begin = begin_of(integrations.front()), span_end = end_of(integrations.front());
  for (const Integration& t : integrations) {
    if (begin_of(t) > span_end) {
      covered += span_end - span_begin;
      span_begin = begin_of(t);
    }
    span_end = std::max(span_end, end_of(t));
  }
  return covered + span_end - span_begin;
}

}  // namespace

void distinct_integrations(std::vector<Integration>& integrations) {
  std::sort(integrations.begin(), integrations.end(), [](const Integration& a, const Integration& b) {
    return a.mid_mjd_s < b.mid_mjd_s || (a.mid_mjd_s == b.mid_mjd_s && a.length_s > b.length_s);
  });
  integrations.erase(std::unique(integrations.begin(), integrations.end(),
                                 [](const Integration& a, const Integration& b) { return a.mid_mjd_s == b.mid_mjd_s; }),
                     integrations.end());
}

ObservingTime observing_time(std::vector<Integration> integrations) {
  if (integrations.empty()) return {};
  distinct_integrations(integrations);
  const std::size_t n = integrations.size();
  ObservingTime time;
  time.median_mjd_s = n % 2 == 1 ? integrations[n / 2].mid_mjd_s
                                 : 0.5 * (integrations[n / 2 - 1].mid_mjd_s + integrations[n / 2].mid_mjd_s);
  time.start_mjd_s = begin_of(*std::min_element(integrations.begin(), integrations.end(),
                                                [](const auto& a, const auto& b) { return begin_of(a) < begin_of(b); }));
  time.end_mjd_s = end_of(*std::max_element(integrations.begin(), integrations.end(),
                                            [](const auto& a, const auto& b) { return end_of(a) < end_of(b); }));
  const bool lengths_known = std::all_of(integrations.begin(), integrations.end(),
                                         [](const Integration& t) { return t.length_s > 0; });
  if (lengths_known) time.on_source_s = covered_s(std::move(integrations));
  return time;
}

}  // namespace spip::ms
