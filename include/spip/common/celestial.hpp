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

// A rotation of Cartesian coordinates on the sphere, row by row.
using Rotation = std::array<std::array<double, 3>, 3>;

// `d` turned by the rotation `m` of equatorial Cartesian coordinates; the longitude in
// [0, 2 pi). The latitude from atan2, not asin, which loses half the digits near a pole.
inline Direction rotated(Direction d, const Rotation& m) {
  const double e[3] = {std::cos(d.dec_rad) * std::cos(d.ra_rad), std::cos(d.dec_rad) * std::sin(d.ra_rad),
                       std::sin(d.dec_rad)};
  double g[3];
  for (int i = 0; i < 3; ++i) g[i] = m[i][0] * e[0] + m[i][1] * e[1] + m[i][2] * e[2];
  const double longitude = std::atan2(g[1], g[0]);
  return {longitude < 0 ? longitude + 2 * 3.14159265358979323846 : longitude,
          std::atan2(g[2], std::hypot(g[0], g[1]))};
}

// FK5's orientation against the Hipparcos frame (ICRS), (-19.9, -9.1, +22.9) mas about
// the x, y and z axes (Mignard & Froeschle 2000; ERFA's fk5hip, which astropy's FK5 to
// ICRS takes), to first order in those angles: the second order, 1e-14 rad (2 nano-arcsec),
// is far below any position spip gives. `to_icrs` false turns the other way.
inline Direction fk5_icrs_rotated(Direction d, bool to_icrs) {
  constexpr double mas = 3.14159265358979323846 / 180 / 3.6e6;
  const double s = to_icrs ? 1.0 : -1.0;
  const double ex = s * -19.9 * mas, ey = s * -9.1 * mas, ez = s * 22.9 * mas;
  return rotated(d, {{{1.0, ez, -ey}, {-ez, 1.0, ex}, {ey, -ex, 1.0}}});
}

// The ICRS direction of an FK5 (J2000) one, as the RMTable standard's ra and dec must be,
// and the FK5 direction of an ICRS one.
inline Direction icrs_of_fk5(Direction d) { return fk5_icrs_rotated(d, true); }
inline Direction fk5_of_icrs(Direction d) { return fk5_icrs_rotated(d, false); }

// Galactic longitude and latitude (radians, l in [0, 2 pi)) of an FK5 (J2000) direction,
// for the RMTable standard's l and b. The Galactic frame is defined in B1950 (IAU 1958:
// pole at RA 192.25, Dec 27.4 deg, l = 123 deg at the celestial pole); these are its pole
// and that longitude precessed to FK5 J2000, the constants astropy's FK5-to-Galactic
// rotation takes, so that l and b are those RMTable users compare against (test_rmtable).
inline std::array<double, 2> galactic(Direction d) {
  static const Rotation fk5_to_galactic = [] {
    constexpr double deg = 3.14159265358979323846 / 180;
    constexpr double pole_ra = 192.8594812065348 * deg, pole_dec = 27.12825118085622 * deg;
    constexpr double l_of_celestial_pole = 122.9319185680026 * deg;
    // The axes turned about z by the pole's RA, about the new y until z is the pole, and
    // about that until the celestial pole lies at l_of_celestial_pole: R_z(n) R_y(t) R_z(a).
    const double ca = std::cos(pole_ra), sa = std::sin(pole_ra);
    const double ct = std::sin(pole_dec), st = std::cos(pole_dec);  // t = 90 deg - pole_dec
    const double cn = -std::cos(l_of_celestial_pole), sn = std::sin(l_of_celestial_pole);  // n = 180 deg - l
    return Rotation{{{cn * ct * ca - sn * sa, cn * ct * sa + sn * ca, -cn * st},
                     {-sn * ct * ca - cn * sa, -sn * ct * sa + cn * ca, sn * st},
                     {st * ca, st * sa, ct}}};
  }();
  const Direction g = rotated(d, fk5_to_galactic);
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
