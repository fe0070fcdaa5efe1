#pragma once
// The sample's sky (data/oskar_small.sky.txt) simulated from another phase centre on the
// sample's array and band: a pointing to make a mosaic with. Header-only, C++17.
#include <cstdlib>
#include <string>

namespace spip::test {

// spip-simulate (`simulate_bin`) writes `out` from RA `ra_deg`, Dec 60, `channels` of
// the sample's 1.2 MHz from 120.6 MHz, 12 dumps, 0.02 Jy noise, through Airy dishes of
// `dish_m`; its output goes to out.log. Returns spip-simulate's exit status.
inline int simulate_sample_pointing(const std::string& simulate_bin, const std::string& data, const std::string& ra_deg,
                                    int channels, const std::string& dish_m, const std::string& out) {
  const std::string command = simulate_bin + " --sky " + data + "/oskar_small.sky.txt --telescope " + data +
                              "/oskar_small.tm --ra " + ra_deg + " --dec 60 --freq-start 120.6e6 --freq-inc 1.2e6" +
                              " --channels " + std::to_string(channels) + " --times 12 --noise 0.02 --beam airy" +
                              " --dish-diameter " + dish_m + " --out " + out + " > " + out + ".log 2>&1";
  return std::system(command.c_str());
}

}  // namespace spip::test
