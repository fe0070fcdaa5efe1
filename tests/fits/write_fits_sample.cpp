// Writes sample FITS products for the astropy check (scripts/check_fits_astropy.py):
//   <dir>/sample_cube.fits   FREQ + STOKES cube filled plane by plane via CubeFile and MPI-IO
//   <dir>/sample_image.fits  2-D image with a restoring beam via write_image
//   <dir>/sample_beams.fits  FREQ + STOKES cube with one beam per plane (CASA's BEAMS table)
//   <dir>/sample_fdf.fits    Faraday depth cube: FDEP axis from -10 rad/m^2 by 0.5, LAMSQ0
#include <cmath>
#include <exception>
#include <filesystem>
#include <iostream>
#include <numbers>
#include <vector>

#include "spip/error.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/parallel/file_io.hpp"
#include "spip/parallel/mpi_context.hpp"

namespace {

using namespace spip::fits;

constexpr double deg = std::numbers::pi / 180.0;

ImageHeader sample_header() {
  ImageHeader h;
  h.nx = 64;
  h.ny = 48;
  h.ra_rad = 201.365 * deg;
  h.dec_rad = -43.019 * deg;
  h.cell_rad = 2.0 / 3600 * deg;
  h.date_obs = "2024-03-01T12:34:56.5";
  h.telescope = "SKA-LOW";
  h.object = "sample";
  h.history = {"written by fits_write_sample"};
  return h;
}

std::vector<float> plane_values(const ImageHeader& h, int k) {
  std::vector<float> plane(static_cast<std::size_t>(h.nx) * h.ny);
  for (std::size_t i = 0; i < plane.size(); ++i) plane[i] = static_cast<float>(k) + 1e-3f * static_cast<float>(i);
  return plane;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fits_write_sample OUTPUT_DIR\n";
    return 2;
  }
  try {
    // The cubes' pixels go through MPI-IO, as the pipeline writes them.
    const spip::parallel::MpiContext mpi(argc, argv);
    const std::filesystem::path dir = argv[1];
    std::filesystem::remove_all(dir);  // the readers' tests must see this run's files only
    std::filesystem::create_directories(dir);

    ImageHeader cube = sample_header();
    cube.spectral = LinearAxis{"FREQ", "Hz", 1.2e9, 1e6, 1, 4};
    cube.stokes = Stokes::I;
    const std::string cube_path = (dir / "sample_cube.fits").string();
    CubeFile::create(cube_path, cube);
    spip::parallel::FileWriter files;
    for (int k : {2, 0, 3, 1}) files.write(CubeFile::plane_write(CubeFile::layout(cube_path), k, plane_values(cube, k)));
    files.close();
    CubeFile::commit(cube_path);

    ImageHeader beams = cube;
    beams.stokes = Stokes::Q;
    beams.beam = Beam{13.0 / 3600 * deg, 7.5 / 3600 * deg, 60 * deg};
    beams.beam_per_plane = true;
    const std::string beams_path = (dir / "sample_beams.fits").string();
    CubeFile::create(beams_path, beams);
    std::vector<Beam> per_plane;
    for (int k = 0; k < 4; ++k) {
      files.write(CubeFile::plane_write(CubeFile::layout(beams_path), k, plane_values(beams, k)));
      per_plane.push_back(Beam{(10.0 + k) / 3600 * deg, (6.0 + 0.5 * k) / 3600 * deg, (30.0 + 10 * k) * deg});
    }
    files.close();
    CubeFile::write_beams(beams_path, per_plane);
    CubeFile::commit(beams_path);

    ImageHeader fdf = sample_header();
    fdf.spectral = LinearAxis{"FDEP", "rad/m^2", -10.0, 0.5, 1, 5};
    fdf.stokes = Stokes::Q;  // as spip writes an FDF's real part
    fdf.extra_keys["LAMSQ0"] = 4.458;
    const std::string fdf_path = (dir / "sample_fdf.fits").string();
    CubeFile::create(fdf_path, fdf);
    for (int k = 0; k < 5; ++k) files.write(CubeFile::plane_write(CubeFile::layout(fdf_path), k, plane_values(fdf, k)));
    files.close();
    CubeFile::commit(fdf_path);

    ImageHeader image = sample_header();
    image.beam = Beam{10.0 / 3600 * deg, 6.0 / 3600 * deg, 30 * deg};
    write_image((dir / "sample_image.fits").string(), image, plane_values(image, 0));
    std::cout << cube_path << '\n';
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "fits_write_sample: " << e.what() << '\n';
    return 1;
  }
}
