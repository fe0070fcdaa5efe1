#pragma once
// The products of one job on the GPU backend against the same job on the CPU backend,
// compared as far as the two can agree (see backend_products.cpp), and the noisy
// pointing those jobs image.
#include <filesystem>
#include <string>

namespace spip::test {

// Every FITS product of `gpu` against `cpu` (the demo's prefix), with gtest
// expectations and a "[ measured ]" line per product; returns the products compared.
int expect_backends_agree(const std::filesystem::path& cpu, const std::filesystem::path& gpu);

// The sample's sky from the sample's own phase centre, 40 channels, with noise
// (sample_pointing.hpp: 12 dumps instead of the sample's 36, through 94 m Airy dishes),
// made under scratch_dir(): the sample itself has none, and then every noise estimate
// of a product (error maps, FDF noise, sigma_add's residuals over the noise, RM-CLEAN's
// noise-scaled cutoff) measures CLEAN's own errors, or float32 rounding at a
// signal-to-noise of 3e8, which the two backends make differently.
std::string noisy_sample_ms();

}  // namespace spip::test
