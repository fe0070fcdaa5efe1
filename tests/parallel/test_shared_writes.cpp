// Product cubes written by several ranks at once through MPI-IO, with no file lock, as
// the pipeline writes them: the fits room lays the bytes out, the parallel room writes.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <exception>
#include <iostream>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "scratch.hpp"
#include "spip/error.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/parallel/file_io.hpp"
#include "mpi_main.hpp"
#include "spip/parallel/mpi_context.hpp"

namespace {

const spip::parallel::MpiContext* const& mpi = spip::test::world;

std::vector<float> random_bits(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
  return v;
}

spip::fits::ImageHeader cube_header(int nx, int ny, int planes) {
  spip::fits::ImageHeader h;
  h.nx = nx;
  h.ny = ny;
  h.cell_rad = 1e-4;
  h.spectral = spip::fits::LinearAxis{"FREQ", "Hz", 1e9, 1e6, 1, planes};
  return h;
}

// A cube that rank 0 creates in its scratch folder, its path on every rank.
std::string shared_cube(const std::string& name, int nx, int ny, int planes) {
  const std::string path = mpi->broadcast_text(mpi->is_root() ? spip::test::scratch_path(name).string() : "");
  if (mpi->is_root()) spip::fits::CubeFile::create(path, cube_header(nx, ny, planes));
  mpi->barrier();
  return path;
}

// Rank 0 reads the committed cube back: its pixels, bit for bit.
std::vector<float> committed(const std::string& path) {
  spip::fits::CubeFile::commit(path);
  return spip::fits::read_image(path).data;
}

}  // namespace

// Every rank writes every size-th plane from a second thread while its main thread
// communicates (the channel writer and the imaging loop). Planes of 900 bytes share
// FITS records with their neighbours on other ranks; a writer that read and wrote
// back whole records, as CFITSIO does, would lose pixels here.
TEST(SharedWrites, InterleavedPlanesOfEveryRankArriveWhole) {
  constexpr int nx = 15, ny = 15, planes = 384;
  const std::size_t plane = std::size_t{nx} * ny;
  const std::string path = shared_cube("shared.fits", nx, ny, planes);

  const std::vector<float> cube = random_bits(plane * planes, 17);
  std::exception_ptr failure;
  spip::parallel::FileWriter files;
  std::thread writer([&] {
    try {
      const spip::fits::CubeLayout layout = spip::fits::CubeFile::layout(path);
      for (int k = mpi->rank(); k < planes; k += mpi->size())
        files.write(spip::fits::CubeFile::plane_write(layout, k, std::span(cube).subspan(k * plane, plane)));
    } catch (...) {
      failure = std::current_exception();
    }
  });
  for (int i = 0; i < 200; ++i) EXPECT_EQ(mpi->sum(1), mpi->size());
  writer.join();
  if (failure) std::rethrow_exception(failure);
  // The file stays open across the rank's writes: opened once, not once per plane.
  EXPECT_EQ(files.files_opened(), 1);
  files.close();
  mpi->barrier();
  if (!mpi->is_root()) return;

  const std::vector<float> read = committed(path);
  ASSERT_EQ(read.size(), cube.size());
  std::size_t lost = 0;
  for (std::size_t i = 0; i < cube.size(); ++i)
    lost += std::bit_cast<std::uint32_t>(read[i]) != std::bit_cast<std::uint32_t>(cube[i]);
  EXPECT_EQ(lost, 0u);
  std::cout << "[ measured ] " << mpi->size() << " ranks wrote " << planes << " interleaved 900-byte planes at once: "
            << lost << " of " << cube.size() << " pixels differ\n";
}

// A slab of rows spans every plane: the Faraday stage's ranks each write theirs.
TEST(SharedWrites, RowSlabsOfEveryRankAssembleTheCube) {
  constexpr int nx = 10, ny = 23, planes = 7;
  const std::size_t plane = std::size_t{nx} * ny;
  const std::string path = shared_cube("slabs.fits", nx, ny, planes);
  const std::vector<float> cube = random_bits(plane * planes, 5);
  const int first = ny * mpi->rank() / mpi->size(), last = ny * (mpi->rank() + 1) / mpi->size();
  std::vector<float> slab;
  for (int k = 0; k < planes; ++k)
    slab.insert(slab.end(), cube.begin() + k * plane + first * nx, cube.begin() + k * plane + last * nx);
  spip::parallel::FileWriter files;
  files.write(spip::fits::CubeFile::row_write(spip::fits::CubeFile::layout(path), first, slab));
  files.close();
  mpi->barrier();
  if (!mpi->is_root()) return;
  const std::vector<float> read = committed(path);
  ASSERT_EQ(read.size(), cube.size());
  for (std::size_t i = 0; i < cube.size(); ++i)
    ASSERT_EQ(std::bit_cast<std::uint32_t>(read[i]), std::bit_cast<std::uint32_t>(cube[i])) << "pixel " << i;
}

TEST(SharedWrites, AFileThatIsNotThereIsNamedInTheError) {
  spip::FileWrite write{"/nonexistent-spip-folder/cube.fits.partial", {{0, std::vector<std::byte>(4)}}};
  try {
    spip::parallel::FileWriter files;
    files.write(write);
    FAIL() << "no exception";
  } catch (const spip::Error& e) {
    EXPECT_NE(std::string(e.what()).find(write.path), std::string::npos) << e.what();
  }
}


// A full disk is the output's fault, as the disk check at the start says: exit 3
// (InputError) with the file named, not an internal failure (exit 1). /dev/full fails
// every write with ENOSPC.
TEST(SharedWrites, AFullDiskIsAnInputErrorNamingTheFile) {
  spip::FileWrite write{"/dev/full", {{0, std::vector<std::byte>(4096)}}};
  try {
    spip::parallel::FileWriter files;
    files.write(write);
    files.close();
    FAIL() << "no exception";
  } catch (const spip::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
  }
}
