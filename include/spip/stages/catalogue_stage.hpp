#pragma once
// The polarised-source catalogue, made by rank 0 from the committed Faraday maps.
#include <optional>
#include <string>
#include <vector>

#include "spip/beam/primary_beam.hpp"
#include "spip/config/config.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/job/product_registry.hpp"
#include "spip/ms/observing_time.hpp"

namespace spip::pipeline {

class Log;

struct CatalogueInputs {
  std::vector<std::string> pixel_maps;  // the Faraday stage's maps, in pixel_map_value() order
  std::string mean_i;                   // the mean-I moment image
  std::string fracpol;                  // with faraday.fractional: the peak-fracpol map, else empty
  double rmsf_fwhm = 1;                 // rad/m^2
  std::optional<beam::PrimaryBeam> primary_beam;  // beam.model's: each source's response is listed
  std::vector<Direction> pointings;     // where the beams point: beamdist is the distance from the nearest
  double reference_freq_hz = 0;         // nu0 = c / lambda0, where the peak PI is
  std::vector<std::string> sigma_add;   // the sigma_add map and its lower and upper errors
  std::string alpha;                    // with faraday.fractional: the Stokes I spectral index map, else empty
  std::vector<double> channel_freq_hz;  // the channels RM synthesis weighted
  std::vector<double> axis_freq_hz;     // every channel of the frequency axis, weighted or blank
  double noise_chan = 0;                // the median of their noise in Q and U, Jy/beam
  double fdf_sigma = 0;                 // the field's FDF noise (RmTableContext::fdf_sigma)
  std::vector<ms::ObservingTime> pointing_times{};  // per pointing: when it was observed; empty: not known
  std::string mean_v{};                 // the mean-V moment image; empty: V not imaged
};

// What rank 0 holds while it makes the catalogue of an image of `pixels` pixels: the
// pixel maps and Stokes I (4 B each), the fractional polarisation it reads for Stokes I,
// the local noise map and the finder's masks. Peak RSS rose by 32 B a pixel with a
// catalogue on 2048^2 cubes.
inline double catalogue_bytes(double pixels) { return 40.0 * pixels; }

// Writes the catalogue (FITS table and CSV) and the same in the RMTable standard, and
// returns their paths.
std::vector<std::string> write_catalogue(const Config& config, const fits::ImageHeader& base,
                                         const CatalogueInputs& inputs, const ProductRegistry& products,
                                         const Log& log);

}  // namespace spip::pipeline
