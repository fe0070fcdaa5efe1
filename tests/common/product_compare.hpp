#pragma once
// Products of two runs of the same job compared as a radio astronomer would, each to a
// fraction of the scale of what it measures: the images and their moments of the
// restored Stokes I peak (of Stokes I's mean in a run on another imager's cubes), the Faraday products mostly of their own peaks, and the maps
// that are non-linear in the data only where a source is (see expect_equal_products).
#include <filesystem>
#include <string>
#include <vector>

namespace spip::test {

// The largest |value| and the median of the finite values (0 where there are none).
double peak_of(const std::vector<float>& values);
double median_of(std::vector<float> values);

// Every product of `other` against `reference` (the demo's prefix), to `tolerance` of
// its scale, with gtest expectations and a "[ measured ]" line per product; returns the
// products compared.
int expect_equal_products(const std::filesystem::path& reference, const std::filesystem::path& other,
                          const std::string& what, double tolerance = 1e-5);

// The largest difference of one image product of two runs (file `name` in each folder)
// over its peak in `reference`, expecting the same pixels blank in both.
double image_difference(const std::filesystem::path& reference, const std::filesystem::path& other,
                        const std::string& name);

}  // namespace spip::test
