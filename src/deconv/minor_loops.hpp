#pragma once
// The pieces of the CPU's minor cycles that point CLEAN and multiscale CLEAN share: the
// joined peak search, the sub-minor loop's active pixels and their Hogbom iterations,
// and the subtraction of the components found.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/deconv/convolver.hpp"

namespace spip::deconv {

// The planes a convolved subtraction works in ([4][N^2] each), kept between passes so
// that a pass neither allocates them nor faults their pages in again.
struct SubtractionPlanes {
  std::vector<float> deltas, response;
};
constexpr double subtraction_planes_bytes_per_pixel = 2 * 4 * sizeof(float);  // 4 Stokes each

// The sub-minor loop's convolution with the PSF, made on first need (a convolver and
// the index of the PSF in it), and its work planes.
struct PsfConvolution {
  std::unique_ptr<Convolver> convolver;
  int psf = -1;
  SubtractionPlanes planes;
};

namespace detail {

struct Peak {
  double value = -1;  // search value (Jy/beam)
  std::size_t pixel = 0;
};

// The joined peak of residual planes [4][pixels]. A null mask searches every pixel;
// otherwise only those where mask[pixel] != 0.
Peak find_peak(PeakSearch search, const float* residual, std::size_t pixels, const std::uint8_t* mask);

// residual_s -= flux_s * psf shifted to `pixel`, over the part of the PSF inside the
// N x N image: rows and columns [lo, hi) where psf_pixel_under() is defined.
void subtract_component(float* residual, MinorPsf psf, int n, std::size_t pixel, const float flux[4]);

struct Component {
  std::size_t pixel = 0;
  std::array<float, 4> flux{};  // I, Q, U, V
};

// The sub-minor loop's pixels: those whose search value exceeds `level`, with their
// residual values in every Stokes plane ([4][count]).
struct ActiveSet {
  std::vector<std::size_t> pixel;
  std::vector<int> x, y;
  std::vector<float> values;
  double level = 0;
  std::size_t size() const { return pixel.size(); }
};

// The most the sub-minor loop's pixels hold per image pixel, for the memory plan: every
// pixel above the stop as a (value, pixel) pair (16 B; at worst every pixel), the
// active set drawn from them (32 B for each of at most N^2/16 pixels), and its
// components (24 B, three times over while their list grows) with their index (about
// 48 B each).
constexpr double active_set_bytes_per_pixel = 16 + (32 + 3 * 24 + 48) / 16.0;

// The pixels of residual planes [4][pixels] above `stop_level` (the brightest N^2/16 of
// them at most: the set's level is then raised to the brightest one left out).
ActiveSet select_active(PeakSearch search, const float* residual, std::size_t pixels, int n, double stop_level,
                        const std::uint8_t* mask);

// Hogbom iterations among the active pixels only, down to the set's level, with a PSF
// of peak 1 (multiscale's twice-convolved PSFs peak below it): each takes gain times the
// pixel's values. Returns the components found,
// one per pixel, and adds their iterations to `iterations`. Where the search value
// passes `divergence_level` (0: not watched) the loop stops and sets `diverged`.
std::vector<Component> clean_active_set(ActiveSet& set, MinorPsf psf, PeakSearch search, double gain,
                                        int max_iterations, int& iterations, double divergence_level = 0,
                                        bool* diverged = nullptr);

// residual -= the components convolved with the filters `product` of `convolver`, in
// `planes`; with a `psf` (the same response as an image) and few components, shifted
// copies of it are subtracted directly instead, and `convolver` may be null.
void subtract_components(const std::vector<Component>& components, Convolver* convolver,
                         const std::vector<int>& product, MinorPsf psf, int n, float* residual,
                         SubtractionPlanes& planes);

// Below this many components, subtracting each PSF directly costs less than the
// convolution's four FFTs of (3N/2)^2.
constexpr std::size_t direct_subtraction_limit = 32;

}  // namespace detail
}  // namespace spip::deconv
