#pragma once
// Joined-polarisation Hogbom CLEAN with Cotton-Schwab major cycles, for one channel.
#include <cstdint>
#include <optional>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/imaging/beam.hpp"
#include "spip/imaging/channel_imager.hpp"

namespace spip::deconv {

struct MinorCycleResult {
  int iterations = 0;
  double peak = 0;  // search value at the last peak found (Jy/beam)
};

// Hogbom minor cycles on residual images [4][N*N] with a PSF of peak 1 at (N/2, N/2):
// one peak search over the Stokes planes (PeakSearch), the component subtracted from
// every plane at the same position, until the search peak falls to `stop_level` or
// `max_iterations` are done. Components are added to `model` (Jy/pixel). With a
// `mask`, only pixels where it is non-zero are searched (the subtraction still covers
// the whole image).
MinorCycleResult hogbom(float* residual, const float* psf, const imaging::ImageGeometry& geometry,
                        PeakSearch search, double gain, double stop_level, int max_iterations, float* model,
                        const std::uint8_t* mask = nullptr);

// The same minor cycles with the sub-minor optimisation (Clark 1980; WSClean's
// sub-minor loop): the pixels whose search value exceeds `stop_level` (the brightest
// N^2/16 of them at most) are taken out, searched and updated among themselves only,
// and the components found are then subtracted from the whole image at once, by FFT
// convolution with the PSF when there are many. That repeats while any pixel of the
// full residual is still above the stop, so the result is Hogbom's to within the
// order in which near-equal peaks are taken; the major cycles keep it exact.
MinorCycleResult subminor_hogbom(float* residual, const float* psf, const imaging::ImageGeometry& geometry,
                                 PeakSearch search, double gain, double stop_level, int max_iterations, float* model,
                                 const std::uint8_t* mask = nullptr);

// The most subminor_hogbom() holds per image pixel of an N x N image beside the images,
// for the memory plan: its FFT convolver (with the PSF's transform), its subtraction
// planes and its pixels above the stop.
double subminor_bytes_per_pixel(int n);

// Robust sigma of an image: 1.4826 * the median absolute deviation from the median.
double mad_sigma(const float* image, std::size_t count);

// The noise of the peak-search quantity of residual planes [4][pixels]: the root sum
// of squares of the MAD sigmas of the Stokes planes it joins (I; Q, U; or I, Q, U, V),
// which is the RMS of the search image where it holds only noise. The automatic
// threshold compares search peaks with this, not with sigma of Stokes I alone.
double search_noise(PeakSearch search, const float* residual, std::size_t pixels);

struct ChannelImages {
  std::vector<float> dirty, psf, model, residual;  // [4][N*N] except psf [N*N]
  std::optional<imaging::Beam> fitted_beam;  // fitted to this channel's PSF; empty where its lobe is not a peak
  int iterations = 0;
  int major_cycles = 0;
  std::vector<double> scales;        // multiscale CLEAN's scales (pixels); empty for point CLEAN or none run
  std::vector<int> scale_iterations; // the iterations spent at each of them
  double search_noise = 0;     // of the final residual, when clean.auto_threshold is set
  double clean_threshold = 0;  // max(clean.threshold, auto_threshold * search_noise) at the end
  bool threshold_reached = true;  // false: clean.niter or clean.max_major stopped CLEAN first
  double residual_sigma = 0;   // MAD sigma of the Stokes I residual
  double residual_peak = 0;    // largest |residual| over the Stokes planes
};

// clean_channel() (major_cycle.hpp) with the CPU backend on a channel's visibilities;
// multiscale CLEAN's scales from the fitted beam.
ChannelImages image_channel(const imaging::ChannelImager& imager, const std::vector<std::complex<float>>& vis,
                            const CleanConfig& clean);

// One major cycle's minor cycles run from the residual's search peak `start` down to
// `stop` = max(floor, (1 - mgain) start), floor = max(threshold, auto_threshold sigma);
// none run (`run` false) when start is not above the floor. A cycle that cleans down
// to the floor itself is the last: its residual is re-imaged once and CLEAN stops, as
// WSClean does, instead of paying a whole major cycle for the few pixels that the
// exact residual lifts back over the floor.
struct MinorCycleLimits {
  bool run = false;
  double stop = 0;
  double floor = 0;
  bool final_cycle = false;
};
MinorCycleLimits minor_cycle_limits(const CleanConfig& clean, double sigma, double start);

// The residual's Stokes I sigma and its peak, once CLEAN is done.
void set_residual_statistics(ChannelImages& out);

// restored = residual + model convolved with `beam`, for the Stokes planes [4][N*N].
std::vector<float> restore_channel(const float* model, const float* residual, const imaging::ImageGeometry& geometry,
                                   const imaging::Beam& beam);

}  // namespace spip::deconv
