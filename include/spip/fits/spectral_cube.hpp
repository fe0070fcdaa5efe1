#pragma once
// Spectral cubes another imager wrote (WSClean's channel images stacked, CASA's exportfits,
// linmos, CASDA): two celestial axes (RA---SIN, DEC--SIN) and a FREQ axis in any order,
// with or without a degenerate STOKES axis, float or scaled integer pixels, NaN blanks.
// They are read a slab of image rows at a time, never whole.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spip/fits/fits_image.hpp"

namespace spip::fits {

struct SpectralCube {
  std::string path;
  // The celestial grid as spip's products take it: size, reference direction and its
  // pixel, cell; the beam (the largest of the channels' where a BEAMS table gives
  // one per channel), BUNIT, TELESCOP, DATE-OBS, OBJECT.
  ImageHeader grid;
  std::vector<double> freq_hz;         // each channel's, in the cube's order
  std::vector<Beam> channel_beams;     // from a BEAMS table (CASA's per-plane beams); empty where none
  std::optional<Stokes> stokes;        // the degenerate STOKES axis's parameter, where there is one
  // Zero-based FITS axes of x (RA), y (Dec) and frequency, and every axis's length.
  int x_axis = 0, y_axis = 1, freq_axis = 2;
  std::vector<long long> naxis;

  int channels() const { return static_cast<int>(freq_hz.size()); }
  // Channel `channel`'s resolution: its BEAMS table's beam, or the header's; none where
  // the cube gives none, or its table a zero beam (a blanked plane's).
  std::optional<Beam> beam_of(int channel) const;
};

// Another imager's Stokes cubes: Q and U, and I or V where given.
struct StokesCubes {
  std::optional<SpectralCube> i, q, u, v;

  // The given ones with their parameters, in the order I, Q, U, V.
  std::vector<std::pair<Stokes, const SpectralCube*>> given() const {
    std::vector<std::pair<Stokes, const SpectralCube*>> out;
    for (const auto& [stokes, cube] : {std::pair{Stokes::I, &i}, std::pair{Stokes::Q, &q}, std::pair{Stokes::U, &u},
                                       std::pair{Stokes::V, &v}})
      if (*cube) out.emplace_back(stokes, &**cube);
    return out;
  }
};

// Reads the header (and a BEAMS table) of a spectral cube; one-line InputErrors for
// anything spip cannot take: a missing file, other projections, rotated or non-square
// pixels, no FREQ axis, a STOKES axis of several planes, other non-degenerate axes.
SpectralCube open_spectral_cube(const std::string& path);

// Rows [first_row, first_row + rows) of every channel, as [channel][row][x], NaN where blank.
std::vector<float> read_cube_rows(const SpectralCube& cube, int first_row, int rows);
// Channel `channel`'s plane, as [y][x].
std::vector<float> read_cube_plane(const SpectralCube& cube, int channel);

// Data bytes this process has read from spectral cubes.
double spectral_cube_bytes_read();

}  // namespace spip::fits
