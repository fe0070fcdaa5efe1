#pragma once
// Issue 41's marks as a run leaves them, on either backend: the cases that could run away
// (tests/pipeline/test_clean_divergence.cpp on the CPU, tests/cuda/test_cuda_pipeline.cpp
// on the GPU) are judged by the same rules. `out` is a run's output folder (prefix spip).
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace spip::test {

// Channel k's record in the run's qa.json.
nlohmann::json channel_qa(const std::filesystem::path& out, int k = 0);

// The run's image of `product` (dirty, model, residual, image) in one Stokes parameter.
std::vector<float> product_plane(const std::filesystem::path& out, const std::string& product, const char* stokes);

// spip's arguments for issue 41's cases (the MS, the image, the band and CLEAN as the
// issue ran them), for either backend to run. The ATCA snapshot's 32 channels from 2613
// to 2644 MHz (its channel k is at 2660 - k MHz) imaged as one, whose PSF is a ridge as
// high as its peak; the weighting is the caller's.
std::string merged_band_case();
// The two below, point or multiscale CLEAN.
std::string degenerate_channel_case(bool multiscale);
std::string wide_lobe_case(bool multiscale);

// One 1 MHz channel of the ATCA snapshot, whose PSF peaks again at 1.0 off its centre:
// marked degenerate; point CLEAN stopped at its threshold, multiscale not started (an
// empty model); every product finite and within 100 times the dirty peak. Returns the
// products' peak over the dirty peak.
double expect_degenerate_channel_marked(const std::filesystem::path& out, bool multiscale);

// OVRO-LWA at 28 MHz on 128 pixels of 60", whose PSF's lobe is wider than the image:
// point CLEAN runs to clean.niter; multiscale diverges, the guard stops and marks it, and
// the log says why and what to do; the CLEAN summary counts it.
void expect_wide_lobe_outcome(const std::filesystem::path& out, const std::string& log, bool multiscale);

}  // namespace spip::test
