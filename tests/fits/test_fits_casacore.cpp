// CASA's own reader: casacore's FITSImage opens the sample products that
// fits_write_sample writes through the fits room, and must find the WCS, the
// pixels and the restoring beams that the sample was written with. CARTA and CASA
// read FITS images through the same classes. C++17, as Debian's casacore headers
// need, so the expected values are the sample's own constants, not spip's headers.
#include <casacore/casa/Arrays/IPosition.h>
#include <casacore/coordinates/Coordinates/CoordinateSystem.h>
#include <casacore/coordinates/Coordinates/DirectionCoordinate.h>
#include <casacore/coordinates/Coordinates/LinearCoordinate.h>
#include <casacore/coordinates/Coordinates/SpectralCoordinate.h>
#include <casacore/coordinates/Coordinates/StokesCoordinate.h>
#include <casacore/images/Images/FITSImage.h>
#include <casacore/images/Images/ImageInfo.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

namespace {

constexpr double pi = 3.14159265358979323846;
constexpr double deg = pi / 180.0;

std::string sample(const char* name) {
  const char* dir = std::getenv("SPIP_FITS_SAMPLE_DIR");
  return std::string(dir ? dir : ".") + "/" + name;
}

// sample_header() of write_fits_sample.cpp: 64 x 48 pixels of 2" at (201.365, -43.019)
// deg, FREQ 1.2 GHz + k MHz over 4 planes, plane k pixel i holding k + 1e-3 i.
void expect_sample_cube(const casacore::FITSImage& image, casacore::Stokes::StokesTypes stokes) {
  EXPECT_EQ(image.shape(), casacore::IPosition(4, 64, 48, 4, 1));
  const casacore::CoordinateSystem& cs = image.coordinates();
  const casacore::DirectionCoordinate& direction = cs.directionCoordinate();
  EXPECT_NEAR(direction.referenceValue()(0), 201.365 * deg, 1e-12);
  EXPECT_NEAR(direction.referenceValue()(1), -43.019 * deg, 1e-12);
  EXPECT_NEAR(direction.increment()(0), -2.0 / 3600 * deg, 1e-15);
  EXPECT_EQ(direction.projection().type(), casacore::Projection::SIN);
  double frequency = 0;
  ASSERT_TRUE(cs.spectralCoordinate().toWorld(frequency, 3.0));
  EXPECT_NEAR(frequency, 1.203e9, 1e-3);
  EXPECT_EQ(cs.stokesCoordinate().stokes()(0), stokes);
  EXPECT_EQ(image.units().getName(), "Jy/beam");
  // Plane 2, pixel (x, y) = (5, 7): i = 7 * 64 + 5.
  const casacore::Array<float> pixel = image.getSlice(casacore::IPosition(4, 5, 7, 2, 0), casacore::IPosition(4, 1));
  EXPECT_FLOAT_EQ(*pixel.begin(), 2.0f + 1e-3f * (7 * 64 + 5));
}

TEST(FitsCasacore, CubeOpensWithItsWcsAndPixels) {
  const casacore::FITSImage image(sample("sample_cube.fits"));
  expect_sample_cube(image, casacore::Stokes::I);
  EXPECT_FALSE(image.imageInfo().hasBeam());
}

TEST(FitsCasacore, PerPlaneBeamsAreReadFromTheBeamsTable) {
  const casacore::FITSImage image(sample("sample_beams.fits"));
  expect_sample_cube(image, casacore::Stokes::Q);
  const casacore::ImageInfo& info = image.imageInfo();
  ASSERT_TRUE(info.hasMultipleBeams());
  const casacore::ImageBeamSet& beams = info.getBeamSet();
  EXPECT_EQ(beams.nchan(), 4u);
  EXPECT_EQ(beams.nstokes(), 1u);
  for (int k = 0; k < 4; ++k) {
    const casacore::GaussianBeam& beam = beams.getBeam(k, 0);
    EXPECT_NEAR(beam.getMajor("arcsec"), 10.0 + k, 1e-4) << k;
    EXPECT_NEAR(beam.getMinor("arcsec"), 6.0 + 0.5 * k, 1e-4) << k;
    EXPECT_NEAR(beam.getPA("deg", true), 30.0 + 10 * k, 1e-4) << k;
  }
}

// An FDF cube's real part: FDEP, then a STOKES axis of Q, as POSSUM archives them.
TEST(FitsCasacore, FaradayDepthCubeHasItsDepthsAndItsStokesAxis) {
  const casacore::FITSImage image(sample("sample_fdf.fits"));
  const casacore::CoordinateSystem& cs = image.coordinates();
  ASSERT_EQ(image.shape().nelements(), 4u);
  EXPECT_EQ(image.shape()(2), 5);
  EXPECT_EQ(image.shape()(3), 1);
  ASSERT_GE(cs.findCoordinate(casacore::Coordinate::STOKES), 0);
  EXPECT_EQ(cs.stokesCoordinate().stokes()(0), casacore::Stokes::Q);
  const int linear = cs.findCoordinate(casacore::Coordinate::LINEAR);
  ASSERT_GE(linear, 0);
  casacore::Vector<double> world;
  ASSERT_TRUE(cs.linearCoordinate(linear).toWorld(world, casacore::Vector<double>(1, 2.0)));
  EXPECT_NEAR(world(0), -9.0, 1e-9);  // third depth: -10 + 2 * 0.5
}

TEST(FitsCasacore, SingleBeamImageHasItsBeam) {
  const casacore::FITSImage image(sample("sample_image.fits"));
  const casacore::ImageInfo& info = image.imageInfo();
  ASSERT_TRUE(info.hasSingleBeam());
  EXPECT_NEAR(info.restoringBeam().getMajor("arcsec"), 10.0, 1e-6);
  EXPECT_NEAR(info.restoringBeam().getMinor("arcsec"), 6.0, 1e-6);
  EXPECT_NEAR(info.restoringBeam().getPA("deg", true), 30.0, 1e-6);
}

}  // namespace
