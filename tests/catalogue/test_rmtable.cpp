// The RMTable columns against their definitions: the Galactic frame's defining
// directions, angles in the standard's [0, 180), and Q and U from PI and the angle.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "spip/catalogue/rmtable.hpp"
#include "spip/common/celestial.hpp"

using namespace spip::catalogue;

namespace {

constexpr double deg = std::numbers::pi / 180;

template <class T>
const std::vector<T>& column(const spip::fits::Table& table, const std::string& name) {
  return table.values<T>(name);
}

}  // namespace

// The Galactic frame's pole and its node on the J2000 equator (the IAU 1958 definition
// precessed to FK5 J2000), the Galactic centre, and two positions as astropy 8 gives them:
// SkyCoord(ra, dec, unit="deg", frame="fk5").galactic. Hipparcos's rounded matrix, which
// spip took before, fails all but the centre's.
TEST(RmTable, GalacticCoordinatesOfTheFramesDefiningDirectionsAndAsAstropyGivesThem) {
  const auto pole = spip::galactic({192.8594812065348 * deg, 27.12825118085622 * deg});
  EXPECT_NEAR(pole[1] / deg, 90.0, 1e-9);
  // The ascending node of the Galactic plane on the equator, 90 deg east of the pole's RA.
  const auto node = spip::galactic({282.8594812065348 * deg, 0.0});
  EXPECT_NEAR(node[0] / deg, 122.9319185680026 - 90, 1e-11);
  EXPECT_NEAR(node[1] / deg, 0.0, 1e-11);
  const auto centre = spip::galactic({266.40500 * deg, -28.93617 * deg});
  EXPECT_NEAR(std::remainder(centre[0] / deg, 360.0), 0.0, 1e-4);
  EXPECT_NEAR(centre[1] / deg, 0.0, 1e-4);
  const auto south = spip::galactic({10 * deg, -30 * deg});
  EXPECT_NEAR(south[0] / deg, 343.4275325011415, 1e-11);
  EXPECT_NEAR(south[1] / deg, -86.18536506934579, 1e-11);
  const auto cygnus = spip::galactic({300.5 * deg, 62.25 * deg});
  EXPECT_NEAR(cygnus[0] / deg, 95.42064895924682, 1e-11);
  EXPECT_NEAR(cygnus[1] / deg, 16.138563000380927, 1e-11);
}

TEST(RmTable, AnglesLieInTheStandardsRangeAndQAndUMakeThePolarisedIntensity) {
  Source s;
  s.name = "SPIP J000000.0+000000";
  s.ra_deg = 10;
  s.dec_deg = -30;
  s.phi = -250;
  s.pi = 0.02;
  s.pi_err = 1e-4;
  s.chi0_deg = -37;
  s.stokes_i = 0.1;
  s.frac_pol = 0.2;
  s.sigma = 1e-4;
  // Every second channel blank: the weighted ones lie 200 MHz apart, the channels are 100 MHz wide.
  const RmTableContext context{"spip test", "MeerKAT", false, false, 0.09, {1e-3, 5e-4, -1.2},
                               {1.0e9, 1.2e9, 1.4e9}, {1.0e9, 1.1e9, 1.2e9, 1.3e9, 1.4e9}, 2e-3};
  const spip::fits::Table table = rmtable({s}, FinderSettings{}, context);
  ASSERT_GE(table.columns.size(), 58u);
  EXPECT_EQ(table.columns[0].name, "ra");
  // The catalogue's FK5 (J2000) position in ICRS, as astropy 6 gives it:
  // SkyCoord(10, -30, unit="deg", frame="fk5").icrs, 9.2 and 5.5 mas away.
  EXPECT_NEAR(column<double>(table, "ra")[0], 9.999997035291825, 1e-9);
  EXPECT_NEAR(column<double>(table, "dec")[0], -30.00000152948646, 1e-9);
  // From images in ICRS the position is the standard's as it is, and l and b those of its
  // FK5 position, as above: one place, one l and b.
  FinderSettings icrs;
  icrs.radesys = "ICRS";
  Source moved = s;
  moved.ra_deg = 9.999997035291825;
  moved.dec_deg = -30.00000152948646;
  const spip::fits::Table from_icrs = rmtable({moved}, icrs, context);
  EXPECT_EQ(column<double>(from_icrs, "ra")[0], moved.ra_deg);
  EXPECT_EQ(column<double>(from_icrs, "dec")[0], moved.dec_deg);
  EXPECT_NEAR(column<double>(from_icrs, "l")[0], column<double>(table, "l")[0], 1e-9);
  EXPECT_NEAR(column<double>(from_icrs, "b")[0], column<double>(table, "b")[0], 1e-9);
  EXPECT_EQ(table.columns[57].name, "notes");
  // chi(lambda0^2) = chi0 + phi lambda0^2 = -37 deg - 22.5 rad, in [0, 180).
  const double expected = std::fmod(std::fmod(-37.0 - 22.5 / deg, 180.0) + 180.0, 180.0);
  const float polangle = column<float>(table, "polangle")[0];
  EXPECT_NEAR(polangle, expected, 1e-3);
  EXPECT_NEAR(column<float>(table, "derot_polangle")[0], 143.0, 1e-4);
  EXPECT_NEAR(std::hypot(column<float>(table, "stokesQ")[0], column<float>(table, "stokesU")[0]), 0.02, 1e-7);
  EXPECT_NEAR(std::atan2(column<float>(table, "stokesU")[0], column<float>(table, "stokesQ")[0]) / 2 / deg,
              std::remainder(expected, 180.0), 1e-3);
  const double pa = column<float>(table, "beam_pa")[0];
  EXPECT_NEAR(pa, 180.0 - 1.2 / deg, 1e-4);
  EXPECT_NEAR(column<float>(table, "reffreq_pol")[0], 299792458.0 / 0.3, 1e2);
  EXPECT_EQ(column<std::string>(table, "telescope")[0], "Unknown");
  EXPECT_EQ(column<std::string>(table, "notes")[0], "telescope: MeerKAT");
  EXPECT_EQ(column<std::int32_t>(table, "Nchan")[0], 3);
  EXPECT_NEAR(column<float>(table, "channelwidth")[0], 1e8, 1);
}

// The standard's names from the names observatories write in an MS or a FITS header:
// in any case, and the VLA's under its EVLA and JVLA names; others are "Unknown".
TEST(RmTable, TelescopesTakeTheStandardsNames) {
  Source s;
  s.name = "SPIP J000000.0+000000";
  for (const auto& [written, standard] : {std::pair{"EVLA", "VLA"}, {"JVLA", "VLA"}, {"atca", "ATCA"},
                                          {"LOFAR", "LOFAR"}, {"MeerKAT", "Unknown"}}) {
    const RmTableContext context{"spip test", written, false, false, 0.09, {1e-3, 5e-4, 0.0}, {1.0e9, 1.2e9},
                                 {1.0e9, 1.2e9}, 2e-3};
    const spip::fits::Table table = rmtable({s}, FinderSettings{}, context);
    EXPECT_EQ(column<std::string>(table, "telescope")[0], standard) << written;
  }
}

// noise_chan is the field's median channel noise carried to the source by the ratio of its
// local FDF noise to the field's: twice the field's FDF noise (as 1 / B = 2 makes it with a
// primary beam), twice the channel noise; without the field's FDF noise, the field's.
TEST(RmTable, ChannelNoiseIsTheSourcesOwn) {
  Source s;
  s.name = "SPIP J000000.0+000000";
  s.sigma = 2e-4;
  RmTableContext context{"spip test", "ASKAP", false, false, 0.09, {1e-3, 5e-4, 0.0}, {1.0e9, 1.2e9},
                         {1.0e9, 1.2e9}, 3e-3};
  EXPECT_FLOAT_EQ(column<float>(rmtable({s}, FinderSettings{}, context), "noise_chan")[0], 3e-3f);
  context.fdf_sigma = 1e-4;
  EXPECT_FLOAT_EQ(column<float>(rmtable({s}, FinderSettings{}, context), "noise_chan")[0], 6e-3f);
}
