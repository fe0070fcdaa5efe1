#pragma once
// Directions on the sky and the tangent-plane axes about them (C++17 and C++20 rooms
// alike): what turning visibilities to another phase centre and placing a primary beam
// on an image centred elsewhere both need.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

namespace spip {

// A direction (J2000 unless said otherwise), radians.
struct Direction {
  double ra_rad = 0, dec_rad = 0;
};

// The east (l, u), north (m, v) and line-of-sight (n, w) unit vectors of the tangent
// plane about `centre`, in equatorial Cartesian coordinates.
inline std::array<std::array<double, 3>, 3> tangent_axes(Direction centre) {
  const double sa = std::sin(centre.ra_rad), ca = std::cos(centre.ra_rad);
  const double sd = std::sin(centre.dec_rad), cd = std::cos(centre.dec_rad);
  return {{{-sa, ca, 0.0}, {-sd * ca, -sd * sa, cd}, {cd * ca, cd * sa, sd}}};
}

// The direction cosines (l, m) of `d` on the tangent plane about `centre` (l east, m north).
inline std::array<double, 2> direction_cosines(Direction d, Direction centre) {
  const double d_ra = d.ra_rad - centre.ra_rad;
  return {std::cos(d.dec_rad) * std::sin(d_ra), std::sin(d.dec_rad) * std::cos(centre.dec_rad) -
                                                    std::cos(d.dec_rad) * std::sin(centre.dec_rad) * std::cos(d_ra)};
}

// The great-circle distance between two directions, by the haversine (exact near zero).
inline double angular_distance_rad(Direction a, Direction b) {
  const double half_dec = 0.5 * (a.dec_rad - b.dec_rad), half_ra = 0.5 * (a.ra_rad - b.ra_rad);
  const double h = std::sin(half_dec) * std::sin(half_dec) +
                   std::cos(a.dec_rad) * std::cos(b.dec_rad) * std::sin(half_ra) * std::sin(half_ra);
  return 2 * std::asin(std::min(1.0, std::sqrt(h)));
}

// A direction's RA in degrees in [0, 360), as FITS keys and records give it.
inline double ra_degrees(Direction d) {
  const double deg = std::fmod(d.ra_rad * 57.295779513082321 + 360.0, 360.0);  // 180 / pi
  return deg >= 360.0 ? 0.0 : deg;
}

// `d` turned by the rotation matrix `m` of equatorial Cartesian coordinates; the
// longitude in [0, 2 pi).
inline Direction rotated(Direction d, const double (&m)[3][3]) {
  const double e[3] = {std::cos(d.dec_rad) * std::cos(d.ra_rad), std::cos(d.dec_rad) * std::sin(d.ra_rad),
                       std::sin(d.dec_rad)};
  double g[3];
  for (int i = 0; i < 3; ++i) g[i] = m[i][0] * e[0] + m[i][1] * e[1] + m[i][2] * e[2];
  const double longitude = std::atan2(g[1], g[0]);
  return {longitude < 0 ? longitude + 2 * 3.14159265358979323846 : longitude, std::asin(std::clamp(g[2], -1.0, 1.0))};
}

// FK5's orientation against the Hipparcos frame (ICRS), (-19.9, -9.1, +22.9) mas about
// the x, y and z axes (Mignard & Froeschle 2000; ERFA's fk5hip, which astropy's FK5 to
// ICRS takes), to first order in those angles: the second order, 1e-14 rad (2 nano-arcsec),
// is far below any position spip gives. `to_icrs` false turns the other way.
inline Direction fk5_icrs_rotated(Direction d, bool to_icrs) {
  constexpr double mas = 3.14159265358979323846 / 180 / 3.6e6;
  const double s = to_icrs ? 1.0 : -1.0;
  const double ex = s * -19.9 * mas, ey = s * -9.1 * mas, ez = s * 22.9 * mas;
  const double m[3][3] = {{1.0, ez, -ey}, {-ez, 1.0, ex}, {ey, -ex, 1.0}};
  return rotated(d, m);
}

// The ICRS direction of an FK5 (J2000) one, as the RMTable standard's ra and dec must be,
// and the FK5 direction of an ICRS one.
inline Direction icrs_of_fk5(Direction d) { return fk5_icrs_rotated(d, true); }
inline Direction fk5_of_icrs(Direction d) { return fk5_icrs_rotated(d, false); }

// Galactic longitude and latitude (radians, l in [0, 2 pi)) of a J2000 direction: the
// rotation of the Hipparcos catalogue's definition (ESA 1997, vol. 1, sec. 1.5.3), for
// the RMTable standard's l and b.
inline std::array<double, 2> galactic(Direction d) {
  constexpr double rotation[3][3] = {{-0.0548755604162154, -0.8734370902348850, -0.4838350155487132},
                                     {+0.4941094278755837, -0.4448296299600112, +0.7469822444972189},
                                     {-0.8676661490190047, -0.1980763734312015, +0.4559837761750669}};
  const Direction g = rotated(d, rotation);
  return {g.ra_rad, g.dec_rad};
}

// The index of the direction of `among` (not empty) nearest to `d`.
inline std::size_t nearest_direction(const std::vector<Direction>& among, Direction d) {
  std::size_t nearest = 0;
  for (std::size_t k = 1; k < among.size(); ++k)
    if (angular_distance_rad(among[k], d) < angular_distance_rad(among[nearest], d)) nearest = k;
  return nearest;
}

}  // namespace spip
