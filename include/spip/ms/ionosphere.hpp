#pragma once
// Ionospheric Faraday rotation. The ionosphere turns the polarisation angle of every
// source by RM_ion(t) lambda^2, chi_observed = chi + RM_ion lambda^2 (the sign of an RM:
// counter-clockwise, N through E, as lambda^2 grows). Because RM_ion changes over the
// night, a source's angle differs from one time sample to the next and adding them
// depolarises it; only a correction per time sample, before gridding, undoes that. The
// table is what RMextract, ALBUS or spinifex give: time (MJD seconds, as the MS TIME
// column) and RM_ion (rad/m^2), interpolated linearly in time.
#include <complex>
#include <string>
#include <vector>

namespace spip::ms {

struct VisBlock;

class IonosphereTable {
 public:
  // Two whitespace-separated numbers per line, time increasing; '#' starts a comment.
  // Throws an InputError naming the file and line.
  static IonosphereTable read(const std::string& path);
  IonosphereTable(std::string path, std::vector<double> time_mjd_s, std::vector<double> rm);

  // RM_ion at `time_mjd_s`; an InputError outside the table's times.
  double rm_at(double time_mjd_s) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<double> time_, rm_;
};

// Turns the linear polarisation of one Stokes Q and U visibility by `angle` (chi ->
// chi + angle): Q' = Q cos 2a - U sin 2a, U' = Q sin 2a + U cos 2a.
void rotate_linear_polarisation(std::complex<float>& q, std::complex<float>& u, double angle);

// Undoes the table's rotation in every row and channel of `block` (angle -RM_ion(t) lambda^2),
// with the weights of the rotated Q and U; where either of them is flagged (weight 0), both
// are.
void derotate(VisBlock& block, const IonosphereTable& table);

}  // namespace spip::ms
