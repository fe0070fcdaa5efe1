#pragma once
// Changes to a copy of a Measurement Set, as real data shows them: NaN or Inf in a
// visibility or weight, flags, recalibrated data. Written with casacore directly
// (C++17); the header is free of casacore.
#include <complex>
#include <cstddef>
#include <string>
#include <vector>

namespace spip::test {

// One correlation sample of the main table.
struct Sample {
  std::size_t row = 0;
  int chan = 0;
  int corr = 0;
};

// The first `count` rows of `ms` that are cross-correlations.
std::vector<std::size_t> cross_correlation_rows(const std::string& ms, std::size_t count);
void set_data(const std::string& ms, const Sample& sample, std::complex<float> value);
void set_flag(const std::string& ms, const Sample& sample);
// Flags correlation `corr` of a row in every channel.
void set_flag_all_channels(const std::string& ms, std::size_t row, int corr);
// FLAG_ROW of every `every`-th row from the first, FLAG left as it is: a row flagged
// whole, as some flaggers and correlators mark it. Returns how many were set.
std::size_t set_flag_row_every(const std::string& ms, std::size_t every);
// WEIGHT of one correlation of a row (an MS without WEIGHT_SPECTRUM).
void set_weight(const std::string& ms, std::size_t row, int corr, float value);
// DATA times `factor` in every row, as a recalibration would change it.
void scale_data(const std::string& ms, float factor);
// DATA of one correlation times `factor` in every row and channel: a gain of one feed.
void scale_correlation(const std::string& ms, int corr, float factor);
// `other`'s rows appended to `ms` as a field of its own (FIELD_ID one past `ms`'s last,
// with `other`'s first FIELD row): two pointings of one array and band in one MS.
void append_as_field(const std::string& ms, const std::string& other);

}  // namespace spip::test
