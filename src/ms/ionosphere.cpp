#include "spip/ms/ionosphere.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "spip/common/constants.hpp"
#include "spip/error.hpp"
#include "spip/ms/ms_reader.hpp"

namespace spip::ms {

IonosphereTable IonosphereTable::read(const std::string& path) {
  std::ifstream in(path);
  if (!in) SPIP_THROW(InputError, path + ": cannot open the ionospheric RM table (faraday.ionosphere)");
  std::vector<double> times, rms;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::istringstream fields(line);
    double time = 0, rm = 0;
    std::string extra;
    if (!(fields >> time >> rm) || (fields >> extra))
      SPIP_THROW(InputError, path + ":" + std::to_string(number) + ": expected 'time_mjd_s rm_rad_m2'");
    if (!times.empty() && !(time > times.back()))
      SPIP_THROW(InputError, path + ":" + std::to_string(number) + ": times must increase");
    times.push_back(time);
    rms.push_back(rm);
  }
  if (times.empty()) SPIP_THROW(InputError, path + ": the ionospheric RM table has no rows");
  return IonosphereTable(path, std::move(times), std::move(rms));
}

IonosphereTable::IonosphereTable(std::string path, std::vector<double> time_mjd_s, std::vector<double> rm)
    : path_(std::move(path)), time_(std::move(time_mjd_s)), rm_(std::move(rm)) {}

double IonosphereTable::rm_at(double time_mjd_s) const {
  // A half-second margin: dump midpoints are often written rounded.
  if (time_mjd_s < time_.front() - 0.5 || time_mjd_s > time_.back() + 0.5) {
    std::ostringstream text;
    text.precision(12);
    text << path_ << ": MS time " << time_mjd_s << " is outside the table's " << time_.front() << " to "
         << time_.back() << " (MJD seconds)";
    SPIP_THROW(InputError, text.str());
  }
  if (time_.size() == 1 || time_mjd_s <= time_.front()) return rm_.front();
  if (time_mjd_s >= time_.back()) return rm_.back();
  const std::size_t k = static_cast<std::size_t>(std::upper_bound(time_.begin(), time_.end(), time_mjd_s) - time_.begin());
  const double t = (time_mjd_s - time_[k - 1]) / (time_[k] - time_[k - 1]);
  return rm_[k - 1] + t * (rm_[k] - rm_[k - 1]);
}

void rotate_linear_polarisation(std::complex<float>& q, std::complex<float>& u, double angle) {
  const double c = std::cos(2 * angle), s = std::sin(2 * angle);
  const std::complex<double> q0(q), u0(u);
  q = std::complex<float>(c * q0 - s * u0);
  u = std::complex<float>(s * q0 + c * u0);
}

void derotate(VisBlock& block, const IonosphereTable& table) {
  std::vector<double> lambda_sq;
  for (double f : block.freq_hz) lambda_sq.push_back(std::pow(speed_of_light / f, 2));
  std::vector<double> rm(block.num_rows());
  for (std::size_t r = 0; r < rm.size(); ++r) rm[r] = table.rm_at(block.time_mjd_s[r]);
  for (int c = 0; c < block.num_channels(); ++c)
    for (std::size_t r = 0; r < rm.size(); ++r) {
      const std::size_t iq = block.index(r, c, stokes_q), iu = block.index(r, c, stokes_u);
      float &wq = block.weight[iq], &wu = block.weight[iu];
      // Each derotated value needs both: with one of them flagged (linear feeds take Q
      // from XX and YY, U from XY and YX), neither can be had.
      if (!(wq > 0) || !(wu > 0)) {
        block.vis[iq] = block.vis[iu] = {};
        wq = wu = 0;
        continue;
      }
      const double angle = -rm[r] * lambda_sq[static_cast<std::size_t>(c)];
      rotate_linear_polarisation(block.vis[iq], block.vis[iu], angle);
      // Each rotated value's variance is its share of both.
      const double cos_sq = std::pow(std::cos(2 * angle), 2), sin_sq = 1 - cos_sq;
      const double var_q = 1.0 / wq, var_u = 1.0 / wu;
      wq = static_cast<float>(1 / (cos_sq * var_q + sin_sq * var_u));
      wu = static_cast<float>(1 / (sin_sq * var_q + cos_sq * var_u));
    }
}

}  // namespace spip::ms
