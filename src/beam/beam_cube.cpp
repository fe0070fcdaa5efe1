// beam.fits: a measured or modelled beam cube, read through the fits room.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>

#include "spip/beam/primary_beam.hpp"
#include "spip/common/celestial.hpp"
#include "spip/common/constants.hpp"
#include "spip/error.hpp"
#include "spip/fits/fits_image.hpp"

namespace spip::beam {
namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
  SPIP_THROW(ConfigError, "beam cube " + path + ": " + what);
}

std::string key(const char* name, std::size_t axis) { return name + std::to_string(axis + 1); }

std::string text_or(const fits::FitsImage& image, const std::string& name, const std::string& otherwise) {
  return image.keywords.contains(name) ? image.text(name) : otherwise;
}

double number_or(const fits::FitsImage& image, const std::string& name, double otherwise) {
  return image.keywords.contains(name) ? image.number(name) : otherwise;
}

// The axis (2 or 3, zero-based) whose CTYPE starts with `type`; -1 if none.
int axis_of(const fits::FitsImage& image, const std::string& type) {
  for (std::size_t a = 2; a < image.shape.size(); ++a)
    if (text_or(image, key("CTYPE", a), "").starts_with(type)) return static_cast<int>(a);
  return -1;
}

// Direction cosines per pixel along a celestial axis, in radians (CUNIT deg, the FITS default).
double step_rad(const fits::FitsImage& image, std::size_t axis) {
  const std::string unit = text_or(image, key("CUNIT", axis), "deg");
  if (unit != "deg") refuse(image.path, key("CUNIT", axis) + " is '" + unit + "'; expected deg");
  const double step = number_or(image, key("CDELT", axis), 0) / rad_to_deg;
  if (!(step != 0 && std::isfinite(step))) refuse(image.path, key("CDELT", axis) + " must be a non-zero number");
  return step;
}

}  // namespace

BeamCube read_beam_cube(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) refuse(path, "no such file");
  const fits::FitsImage image = [&] {
    try {
      return fits::read_image(path);
    } catch (const Error& e) {  // there, but not a FITS image CFITSIO reads
      refuse(path, e.what());
    }
  }();
  const std::size_t naxis = image.shape.size();
  if (naxis < 3 || naxis > 4 || text_or(image, "CTYPE1", "") != "RA---SIN" ||
      text_or(image, "CTYPE2", "") != "DEC--SIN")
    refuse(path, "expected axes RA---SIN, DEC--SIN, FREQ and optionally STOKES");
  if (image.keywords.contains("CD1_1") || number_or(image, "PC1_2", 0) != 0 || number_or(image, "PC2_1", 0) != 0 ||
      number_or(image, "CROTA2", 0) != 0)
    refuse(path, "its celestial axes are rotated (CD, PC or CROTA); expected CDELT1 and CDELT2 alone");
  const int freq_axis = axis_of(image, "FREQ"), stokes_axis = axis_of(image, "STOKES");
  if (freq_axis < 0 || (naxis == 4 && stokes_axis < 0)) refuse(path, "expected a FREQ axis and optionally a STOKES axis");
  if (text_or(image, key("CUNIT", freq_axis), "Hz") != "Hz") refuse(path, "the FREQ axis's unit must be Hz");
  const long stokes = stokes_axis < 0 ? 1 : image.shape[static_cast<std::size_t>(stokes_axis)];
  if (stokes_axis >= 0) {
    const std::size_t sa = static_cast<std::size_t>(stokes_axis);
    const double step = number_or(image, key("CDELT", sa), 1);
    const double first = number_or(image, key("CRVAL", sa), 1) + (1 - number_or(image, key("CRPIX", sa), 1)) * step;
    if (first != 1 || (stokes != 1 && !(stokes == 4 && step == 1)))
      refuse(path, "its STOKES axis must be I alone (the response) or I, Q, U, V (the response and its leakages)");
  }

  BeamCube cube;
  cube.path = path;
  cube.nx = static_cast<int>(image.shape[0]);
  cube.ny = static_cast<int>(image.shape[1]);
  if (cube.nx < 2 || cube.ny < 2) refuse(path, "a beam needs at least 2 x 2 pixels");
  cube.ref_x = number_or(image, "CRPIX1", 1) - 1;
  cube.ref_y = number_or(image, "CRPIX2", 1) - 1;
  cube.dl = step_rad(image, 0);
  cube.dm = step_rad(image, 1);
  // A field imaged about another centre says where its pointing is in OBSRA and OBSDEC
  // (spip's own pb.fits, and CASA's images): the beam is centred there, not on CRPIX.
  if (image.keywords.contains("OBSRA") && image.keywords.contains("OBSDEC")) {
    const Direction centre{number_or(image, "CRVAL1", 0) / rad_to_deg, number_or(image, "CRVAL2", 0) / rad_to_deg};
    const Direction pointing{image.number("OBSRA") / rad_to_deg, image.number("OBSDEC") / rad_to_deg};
    const auto [l, m] = direction_cosines(pointing, centre);
    cube.ref_x += l / cube.dl;
    cube.ref_y += m / cube.dm;
  }
  // A mosaic's effective response (spip's pb.fits of several pointings) is not one
  // antenna's beam: it has several centres and exceeds 1 where they overlap.
  for (const std::string& line : image.history)
    if (line.starts_with("linear mosaic of "))
      refuse(path, "its HISTORY says it is a linear mosaic's effective response, not one pointing's beam");
  float highest = 0;
  for (float v : image.data) highest = v > highest ? v : highest;  // blank (NaN) pixels are never larger
  if (highest > 1.01f)
    refuse(path, "its response reaches " + std::to_string(highest) +
                     ", above the 1 of a beam at its pointing (a mosaic's effective response?)");
  const std::size_t fa = static_cast<std::size_t>(freq_axis);
  const long planes = image.shape[fa];
  const double crval = image.number(key("CRVAL", fa)), cdelt = number_or(image, key("CDELT", fa), 0);
  const double crpix = number_or(image, key("CRPIX", fa), 1);
  if (!(crval > 0) || !(cdelt != 0) || !std::isfinite(cdelt))
    refuse(path, "its FREQ axis needs CRVAL > 0 and a non-zero CDELT (a plane's width)");

  // FITS order: x, y, then axes 3 and 4 in the file's order.
  const std::size_t plane_pixels = static_cast<std::size_t>(cube.nx) * cube.ny;
  const std::size_t freq_stride = fa == 2 ? 1 : static_cast<std::size_t>(stokes);
  const std::size_t stokes_stride = fa == 2 ? static_cast<std::size_t>(planes) : 1;
  const auto plane = [&](std::size_t p, std::size_t s) {
    return image.data.data() + (p * freq_stride + s * stokes_stride) * plane_pixels;
  };
  // Planes by ascending frequency; a wholly blank one (a flagged channel of spip's own pb
  // cube) is left out, so that its neighbours are interpolated across it.
  std::vector<std::size_t> order;
  for (std::size_t p = 0; p < static_cast<std::size_t>(planes); ++p)
    if (std::any_of(plane(p, 0), plane(p, 0) + plane_pixels, [](float v) { return std::isfinite(v); }))
      order.push_back(p);
  if (order.empty()) refuse(path, "every plane is blank");
  if (cdelt < 0) std::ranges::reverse(order);
  for (std::size_t p : order) cube.freq_hz.push_back(crval + (static_cast<double>(p) + 1 - crpix) * cdelt);
  if (!(cube.freq_hz.front() > 0)) refuse(path, "its FREQ axis reaches frequencies <= 0");
  cube.lowest_hz = cube.freq_hz.front() - std::abs(cdelt) / 2;
  cube.highest_hz = cube.freq_hz.back() + std::abs(cdelt) / 2;
  const auto copy_planes = [&](std::size_t s, std::vector<float>& to) {
    for (std::size_t p : order)
      for (std::size_t i = 0; i < plane_pixels; ++i) to.push_back(std::isfinite(plane(p, s)[i]) ? plane(p, s)[i] : 0.0f);
  };
  copy_planes(0, cube.response);
  for (std::size_t s = 1; s < static_cast<std::size_t>(stokes); ++s) copy_planes(s, cube.leakage);
  return cube;
}

PrimaryBeam cube_beam(const std::string& path) {
  PrimaryBeam beam;
  beam.model = Model::cube;
  beam.cube = std::make_shared<const BeamCube>(read_beam_cube(path));
  beam.name = "beam.fits " + path;
  beam.lowest_hz = beam.cube->lowest_hz;
  beam.highest_hz = beam.cube->highest_hz;
  return beam;
}

}  // namespace spip::beam
