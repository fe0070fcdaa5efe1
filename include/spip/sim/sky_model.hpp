#pragma once
// Sky models with a known answer, and their exact visibilities.
#include <complex>
#include <cstddef>
#include <string>
#include <vector>

#include "spip/beam/primary_beam.hpp"

namespace spip::sim {

// One point or elliptical Gaussian component. Polarisation follows OSKAR:
//   I(nu) = I0 (nu/nu0)^alpha,  V(nu) = V0 (nu/nu0)^alpha,
//   Q + iU = p I(nu) exp(2i (chi0 + RM lambda^2)).
struct Component {
  std::string name;
  double ra_rad = 0, dec_rad = 0;
  double i0_jy = 0;
  double v0_jy = 0;
  double ref_freq_hz = 0;          // 0: flat spectrum
  double spectral_index = 0;
  double pol_frac = 0;
  double chi0_rad = 0;             // polarisation angle at lambda^2 = 0
  double rm_rad_m2 = 0;
  double major_fwhm_rad = 0;       // 0: a point source
  double minor_fwhm_rad = 0;
  double pa_rad = 0;               // east of north

  double stokes_i(double freq_hz) const;
  double stokes_v(double freq_hz) const;
  std::complex<double> linear_pol(double freq_hz) const;  // Q + iU
};

struct SkyModel {
  std::vector<Component> components;
};

// Reads OSKAR's named-column text format ("Format = Name, RaD, DecD, I, ..."; RaD/DecD
// in degrees, MajorAxis/MinorAxis FWHM in arcsec, Orientation and PolarizationAngle in
// degrees). Q and U, when given, are the linear polarisation at ReferenceFrequency.
SkyModel read_sky_model(const std::string& path);

// Direction cosines of (ra, dec) about the phase centre (ra0, dec0).
struct Lmn {
  double l, m, n;
};
Lmn direction_cosines(double ra, double dec, double ra0, double dec0);

// Exact visibilities [row][chan][XX, XY, YX, YY] by a direct sum in double precision:
//   V = sum_s B_s(nu) G_s(u,v) exp(+2 pi i (u l + v m + w (n - 1)) / lambda),
//   B = [I+Q, U+iV, U-iV, I-Q], UVW in metres (antenna1 - antenna2).
// Gaussians use the FWHM ellipse on the tangent plane at the phase centre. With a
// primary beam, B_s(nu) is attenuated by the beam's response at the component's
// centre, the pointing being the phase centre (for a Gaussian, a fair approximation
// while it is small beside the beam).
void predict(const SkyModel& sky, double ra0, double dec0, const double* uvw_m, std::size_t num_rows,
             const std::vector<double>& freq_hz, std::complex<float>* vis,
             const beam::PrimaryBeam* primary_beam = nullptr);

}  // namespace spip::sim
