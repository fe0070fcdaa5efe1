#pragma once
// Joined-polarisation Hogbom CLEAN with Cotton-Schwab major cycles, for one channel.
#include <cstdint>
#include <optional>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/deconv/clean_math.hpp"
#include "spip/imaging/beam.hpp"
#include "spip/imaging/channel_imager.hpp"

namespace spip::deconv {

struct MinorCycleResult {
  int iterations = 0;
  double peak = 0;  // search value at the last peak found (Jy/beam)
  bool diverged = false;  // stopped because the peak rose above the divergence level
};

// Hogbom minor cycles on residual images [4][N*N]: one peak search over the Stokes
// planes (PeakSearch), the component subtracted from every plane at the same position,
// until the search peak falls to `stop_level` or `max_iterations` are done, or rises
// above `divergence_level` (diverged; 0: not watched). Components are added to `model`
// (Jy/pixel). With a `mask`, only pixels where it is non-zero are searched (the
// subtraction still covers the whole image).
MinorCycleResult hogbom(float* residual, MinorPsf psf, const imaging::ImageGeometry& geometry, PeakSearch search,
                        double gain, double stop_level, int max_iterations, float* model,
                        const std::uint8_t* mask = nullptr, double divergence_level = 0);

// The same minor cycles with the sub-minor optimisation (Clark 1980; WSClean's
// sub-minor loop): the pixels whose search value exceeds `stop_level` (the brightest
// N^2/16 of them at most) are taken out, searched and updated among themselves only,
// and the components found are then subtracted from the whole image at once, by FFT
// convolution with the PSF when there are many. That repeats while any pixel of the
// full residual is still above the stop, so the result is Hogbom's to within the
// order in which near-equal peaks are taken; the major cycles keep it exact.
MinorCycleResult subminor_hogbom(float* residual, MinorPsf psf, const imaging::ImageGeometry& geometry,
                                 PeakSearch search, double gain, double stop_level, int max_iterations, float* model,
                                 const std::uint8_t* mask = nullptr, double divergence_level = 0);

// What point CLEAN's PSF of twice the image's side holds per image pixel on the host, for
// the memory plan: the PSF itself (4 floats per image pixel) and, while it is imaged,
// over four times the image's pixels, its gridder's sums and grid correction (about
// 32 B per wide pixel) and its FFT grid (a complex float per cell, padding^2 cells per
// wide pixel). The sub-minor loop starts only once it is made.
double minor_psf_bytes_per_pixel(const imaging::ImageGeometry& geometry);
// And per row of the channel while it is imaged: its gridder's points (2-D, as
// imaging::wide_psf makes it; imaging::Gridder::bytes_per_visibility) and the
// coordinates, unit visibilities and weights it grids.
double minor_psf_bytes_per_row(const imaging::ImageGeometry& geometry, double accuracy);

// The most subminor_hogbom() holds per image pixel of an N x N image beside the images,
// for the memory plan: its FFT convolver (with the transform of a PSF of twice the
// image's side), its subtraction planes and its pixels above the stop.
double subminor_bytes_per_pixel(int n);

// Robust sigma of an image: 1.4826 * the median absolute deviation from the median.
double mad_sigma(const float* image, std::size_t count);

// The noise of the peak-search quantity of residual planes [4][pixels]: the root sum
// of squares of the MAD sigmas of the Stokes planes it joins (I; Q, U; or I, Q, U, V),
// which is the RMS of the search image where it holds only noise. The automatic
// threshold compares search peaks with this, not with sigma of Stokes I alone.
double search_noise(PeakSearch search, const float* residual, std::size_t pixels);

// Why CLEAN stopped on a channel (qa.json's clean_stop): it reached its threshold; it ran
// out of clean.niter or clean.max_major; a cycle found no component; its peak rose past
// clean.divergence_limit; or it did not start, on a degenerate PSF. `none`: no CLEAN asked.
enum class CleanStop { none, threshold, niter, max_major, no_components, diverged, degenerate_psf };
const char* clean_stop_name(CleanStop stop);

// A PSF sidelobe at or above its peak (1 - 1e-3 of it or more), beyond the main lobe's
// half width (the distance to the nearest pixel below half the peak): the fringe of
// one line of baselines, an aliasing grating. Two sources that far apart give the same
// image, so nothing can tell them apart, and CLEAN may trade flux between them without end.
struct PsfSidelobe {
  double value = 0;        // relative to the peak
  double distance_px = 0;  // from the peak
};
std::optional<PsfSidelobe> degenerate_sidelobe(const float* psf, int n);

// The largest |PSF| at least N/4 pixels from the peak along x or y: what a minor cycle
// with the image-sized PSF leaves unsubtracted beyond the image's half width is of that
// order. Hogbom with such a truncated PSF, as AIPS, CASA and WSClean run it, converges
// in practice where far sidelobes are low; from whole_psf_sidelobe on, spip's minor
// cycles subtract the PSF of twice the image's side instead (it costs a PSF imaged on a
// grid of four times the cells, with about four times the w-planes).
double far_sidelobe(const float* psf, int n);
inline constexpr double whole_psf_sidelobe = 0.2;

struct ChannelImages {
  std::vector<float> dirty, psf, model, residual;  // [4][N*N] except psf [N*N]
  std::optional<imaging::Beam> fitted_beam;  // fitted to this channel's PSF; empty where its lobe is not a peak
  int iterations = 0;
  int major_cycles = 0;
  std::vector<double> scales;        // multiscale CLEAN's scales (pixels); empty for point CLEAN or none run
  std::vector<int> scale_iterations; // the iterations spent at each of them
  double search_noise = 0;     // measured when the last major cycle began (clean.auto_threshold set): what CLEAN stopped against
  double clean_threshold = 0;  // max(clean.threshold, auto_threshold * search_noise) at the end
  bool threshold_reached = true;  // false: CLEAN stopped for another reason (clean_stop) first
  CleanStop clean_stop = CleanStop::none;
  std::optional<PsfSidelobe> degenerate_psf;  // set where the PSF is degenerate
  double diverged_peak = 0;  // the search peak that stopped a diverged channel's CLEAN
  double far_sidelobe = 0;   // the PSF's highest value N/4 or more from its centre (far_sidelobe())
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
