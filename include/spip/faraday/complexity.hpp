#pragma once
// Faraday complexity from the channels: how far a spectrum's Q and U scatter about the
// Faraday-thin source its FDF peak describes, beyond their noise.
#include <span>

namespace spip::faraday {

// The additional scatter sigma_add (Purcell et al. 2017, RM-Tools' calc_sigma_add): the
// residuals y_i of Q and U from the thin model, each over its channel's noise, are taken
// as drawn from a normal distribution of variance 1 + sigma_add^2. With a flat prior on
// log sigma_add over 1000 samples from range/1000 to the range of y_i +- 1, `value` is
// the posterior's median and `minus`, `plus` the distances to its 15.72 and 84.27
// percentiles: the 1-sigma interval, whose lower end is 0 where it falls in the first
// sample (not, as RM-Tools has it, that sample). NaN without residuals. A Faraday-thin source in
// noise gives a value of the order of its lower error; one whose Q and U the thin model
// misses gives a value many times it.
struct SigmaAdd {
  double value, minus, plus;
};
SigmaAdd sigma_add(std::span<const double> normalised_residuals);

}  // namespace spip::faraday
