// The memory plan's share for CLEAN against what CLEAN allocates: this binary replaces
// operator new and delete, aligned ones too (the FFT grids), with ones that count the
// bytes live and their peak, so the test measures the minor cycles' buffers instead of
// trusting the plan's arithmetic.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/deconv/convolver.hpp"
#include "spip/deconv/multiscale.hpp"
#include "spip/error.hpp"
#include "spip/imaging/beam.hpp"
#include "spip/imaging/channel_imager.hpp"
#include "spip/imaging/fft.hpp"
#include "spip/imaging/geometry.hpp"
#include "spip/job/memory_budget.hpp"
#include "spip/stages/catalogue_stage.hpp"
#include "scratch.hpp"

namespace {

std::atomic<std::size_t> live_bytes{0}, peak_bytes{0};
// Each block carries its size in front, so that delete can subtract it.
constexpr std::size_t header = __STDCPP_DEFAULT_NEW_ALIGNMENT__;

void* counted_new(std::size_t size) {
  if (size > std::numeric_limits<std::size_t>::max() - header) throw std::bad_alloc();
  void* block = std::malloc(size + header);
  if (!block) throw std::bad_alloc();
  *static_cast<std::size_t*>(block) = size;
  const std::size_t now = live_bytes += size;
  std::size_t seen = peak_bytes.load();
  while (now > seen && !peak_bytes.compare_exchange_weak(seen, now)) {
  }
  return static_cast<char*>(block) + header;
}

void counted_delete(void* p) noexcept {
  if (!p) return;
  void* block = static_cast<char*>(p) - header;
  live_bytes -= *static_cast<std::size_t*>(block);
  std::free(block);
}

// An aligned block carries its size one alignment in front.
void* counted_aligned_new(std::size_t size, std::align_val_t alignment) {
  const auto align = std::max(static_cast<std::size_t>(alignment), sizeof(std::size_t));
  if (size > std::numeric_limits<std::size_t>::max() - 2 * align) throw std::bad_alloc();
  void* block = std::aligned_alloc(align, (size + 2 * align - 1) / align * align);
  if (!block) throw std::bad_alloc();
  *static_cast<std::size_t*>(block) = size;
  const std::size_t now = live_bytes += size;
  std::size_t seen = peak_bytes.load();
  while (now > seen && !peak_bytes.compare_exchange_weak(seen, now)) {
  }
  return static_cast<char*>(block) + align;
}

void counted_aligned_delete(void* p, std::align_val_t alignment) noexcept {
  if (!p) return;
  void* block = static_cast<char*>(p) - std::max(static_cast<std::size_t>(alignment), sizeof(std::size_t));
  live_bytes -= *static_cast<std::size_t*>(block);
  std::free(block);
}

// The most bytes `work` holds at once through operator new.
template <typename Work>
double peak_of(Work&& work) {
  const std::size_t before = live_bytes.load();
  peak_bytes = before;
  work();
  return static_cast<double>(peak_bytes.load() - before);
}

// A Gaussian of FWHM `fwhm` pixels and peak `peak` at the image's centre.
std::vector<float> gaussian(int n, double fwhm, double peak) {
  std::vector<float> image(static_cast<std::size_t>(n) * n);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const double r2 = (x - n / 2) * (x - n / 2) + (y - n / 2) * (y - n / 2);
      image[static_cast<std::size_t>(y) * n + x] = static_cast<float>(peak * std::exp(-4 * std::log(2.0) * r2 / (fwhm * fwhm)));
    }
  return image;
}

constexpr int n = 256;
constexpr std::size_t pixels = static_cast<std::size_t>(n) * n;
const auto geometry = spip::imaging::ImageGeometry::make(n, 10.0 / 206264.806, 1.2);

// `held` bytes per pixel are within the CPU plan's share for `clean`, and at least
// `least` of it: the plan bounds the allocations without asking for much more.
void expect_within_plan(const std::string& what, double held, const spip::CleanConfig& clean, double least) {
  const double planned = spip::pipeline::clean_bytes_per_pixel(clean, geometry, false);
  std::cout << what << " held " << held << " B per pixel at most; the plan counts " << planned << "\n";
  EXPECT_LE(held, planned) << what;
  EXPECT_GE(held, least * planned) << what;
}

// One rank's needs: `channels` channels of `rows` visibilities on a `size`^2 image, and
// Faraday rows of `row_bytes`.
spip::pipeline::MemoryNeeds needs_of(double budget, int size, double rows, int channels, double row_bytes) {
  spip::pipeline::MemoryNeeds needs;
  needs.budget = budget;
  needs.geometry = spip::imaging::ImageGeometry::make(size, 1e-4, 1.2);
  needs.rows_per_channel = rows;
  needs.my_channels = channels;
  needs.faraday_row_bytes = row_bytes;
  return needs;
}

// The message of the ConfigError that `plan` throws; "" where it throws none.
template <typename Plan>
std::string refusal(Plan&& plan) {
  try {
    plan();
  } catch (const spip::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

void* operator new(std::size_t size) { return counted_new(size); }
void* operator new[](std::size_t size) { return counted_new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return counted_new(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p) noexcept { counted_delete(p); }
void operator delete[](void* p) noexcept { counted_delete(p); }
void operator delete(void* p, std::size_t) noexcept { counted_delete(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_delete(p); }
void* operator new(std::size_t size, std::align_val_t alignment) { return counted_aligned_new(size, alignment); }
void* operator new[](std::size_t size, std::align_val_t alignment) { return counted_aligned_new(size, alignment); }
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  try {
    return counted_aligned_new(size, alignment);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t& tag) noexcept {
  return operator new(size, alignment, tag);
}
void operator delete(void* p, std::align_val_t alignment) noexcept { counted_aligned_delete(p, alignment); }
void operator delete[](void* p, std::align_val_t alignment) noexcept { counted_aligned_delete(p, alignment); }
void operator delete(void* p, std::size_t, std::align_val_t alignment) noexcept { counted_aligned_delete(p, alignment); }
void operator delete[](void* p, std::size_t, std::align_val_t alignment) noexcept {
  counted_aligned_delete(p, alignment);
}
void operator delete(void* p, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  counted_aligned_delete(p, alignment);
}
void operator delete[](void* p, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  counted_aligned_delete(p, alignment);
}

// Multiscale CLEAN on an extended source: the most its construction and minor cycles
// hold at once is within the plan's share for it, and the plan asks for little more.
TEST(MemoryBudget, CountsWhatMultiscaleCleanHolds) {
  spip::CleanConfig clean;
  clean.niter = 1000;
  clean.multiscale = true;
  clean.scales = {0, 8, 16, 32};
  const std::vector<float> psf = gaussian(n, 3, 1);
  std::vector<float> residual(4 * pixels, 0.0f), model(4 * pixels, 0.0f);
  const std::vector<float> source = gaussian(n, 20, 1);
  for (int s = 0; s < 3; ++s)
    for (std::size_t p = 0; p < pixels; ++p) residual[s * pixels + p] = source[p] * (s == 0 ? 1.0f : 0.1f);

  const double peak = peak_of([&] {
    spip::deconv::MultiscaleClean multiscale(psf.data(), n, {clean.scales, 0.6, 6.0}, [](int reach) {
      return spip::deconv::make_host_convolver(n, reach);
    });
    const spip::deconv::MinorCycleResult result = multiscale.run(
        residual.data(), model.data(), nullptr, spip::PeakSearch::full_stokes, 0.1, 0.05, clean.niter);
    ASSERT_GT(result.iterations, 0);
    ASSERT_GT(multiscale.iterations_per_scale()[2], 0) << "the source is cleaned at its own scales";
  });
  expect_within_plan("multiscale CLEAN", peak / pixels, clean, 0.8);
}

// The sub-minor loop on a residual whose every pixel stays above the stop (the most it
// lists), through several passes (the later ones list those pixels while the first's
// convolver and subtraction planes are held), with enough components that it
// subtracts them by FFT: within the plan's share.
TEST(MemoryBudget, CountsWhatTheSubminorLoopHolds) {
  spip::CleanConfig clean;
  clean.niter = 20000;
  clean.subminor = true;
  const std::vector<float> psf = gaussian(spip::deconv::minor_psf_side(n), 3, 1);
  std::vector<float> residual(4 * pixels), model(4 * pixels, 0.0f);
  std::uint32_t state = 12345;  // a fixed pseudo-random field, every pixel at least 1
  for (float& v : residual) {
    state = state * 1664525u + 1013904223u;
    v = (state >> 8 & 1 ? 1.0f : -1.0f) * (1.0f + static_cast<float>(state >> 16) / 65536.0f);
  }
  const double peak = peak_of([&] {
    const spip::deconv::MinorCycleResult result = spip::deconv::subminor_hogbom(
        residual.data(), {psf.data(), spip::deconv::minor_psf_side(n)}, geometry, spip::PeakSearch::full_stokes, 0.1,
        0.5, clean.niter, model.data());
    ASSERT_EQ(result.iterations, clean.niter);
  });
  const double psf_held = static_cast<double>(psf.size() * sizeof(float)) / pixels;
  expect_within_plan("the sub-minor loop", peak / pixels + psf_held, clean, 0.7);
}

// The PSF of twice the image's side, imaged for the minor cycles: what its gridder holds
// while it is made, per image pixel (with few rows) and per row (the difference made by
// ten times the rows), within the plan's shares for it.
TEST(MemoryBudget, CountsWhatTheWidePsfHolds) {
  const auto held_with = [](int rows) {
    spip::imaging::ChannelImager imager(geometry, 1e-4, true);
    std::vector<double> uvw;
    std::uint32_t state = 777;
    const auto uniform = [&state] {
      state = state * 1664525u + 1013904223u;
      return static_cast<double>(state >> 8) / (1u << 24) * 2 - 1;
    };
    for (int k = 0; k < rows; ++k) uvw.insert(uvw.end(), {4000 * uniform(), 4000 * uniform(), 300 * uniform()});
    imager.set_data(uvw, std::vector<float>(4 * static_cast<std::size_t>(rows), 1.0f));
    std::vector<float> psf;
    return peak_of([&] { psf = imager.psf(spip::deconv::minor_psf_side(n), nullptr); });
  };
  const double few = held_with(2000), many = held_with(20000);
  const double per_pixel = few / pixels, per_row = (many - few) / 18000;
  const double planned = spip::deconv::minor_psf_bytes_per_pixel(geometry);
  const double planned_per_row = spip::deconv::minor_psf_bytes_per_row(geometry, 1e-4);
  std::cout << "the wide PSF held " << per_pixel << " B per pixel and " << per_row
            << " B per row at most; the plan counts " << planned << " and " << planned_per_row << "\n";
  EXPECT_LE(per_pixel, planned);
  EXPECT_GE(per_pixel, 0.6 * planned);
  EXPECT_LE(per_row, planned_per_row);
  EXPECT_GE(per_row, 0.6 * planned_per_row);
}

// Convolving planes to another beam: what it allocates through operator new (the
// kernel's transform, the weights) and its FFT grid (aligned operator new, 8 bytes a cell) are
// within smoothing_bytes(), which asks for little more.
TEST(MemoryBudget, CountsWhatConvolvingToABeamHolds) {
  const double arcsec = 1 / 206264.806;
  const spip::imaging::Beam from{12 * arcsec, 8 * arcsec, 0.3}, to{30 * arcsec, 20 * arcsec, -0.2};
  const int nx = 200, ny = 150;
  std::vector<float> planes(3 * static_cast<std::size_t>(nx) * ny, 1.0f);
  planes[5] = NAN;  // the first plane goes beside its own mask, the others in a pair
  const int grid = spip::imaging::smoothing_grid(nx, ny, 2 * arcsec, {from}, to);
  spip::imaging::Fft2d::shared(grid);  // FFTW's plans are the process's, made once
  const double held =
      peak_of([&] { spip::imaging::convolve_to_beam(planes.data(), 3, nx, ny, 2 * arcsec, from, to, grid); });
  const double planned = spip::imaging::smoothing_bytes(grid);
  std::cout << "convolving held " << held << " B; the plan counts " << planned << "\n";
  EXPECT_LE(held, planned);
  EXPECT_GE(held, 0.8 * planned);
}

// A job on a shared node may use what its cgroup allows, not the node's memory: v2's
// memory.max and v1's memory.limit_in_bytes, on its own cgroup or one above it (Slurm
// limits the job and runs its steps below), "max" and v1's 2^63 meaning none.
TEST(MemoryBudget, TheNodesMemoryIsWhatTheJobsCgroupAllows) {
  namespace fs = std::filesystem;
  const fs::path root = spip::test::scratch_path("cgroup");
  const auto write = [&](const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text << "\n";
  };
  write(root / "slurm/job_7/memory.max", "4294967296");
  write(root / "slurm/job_7/step_0/memory.max", "max");
  EXPECT_EQ(spip::pipeline::cgroup_limit_bytes(root, "0::/slurm/job_7/step_0\n"), 4294967296.0);
  write(root / "memory/docker/abc/memory.limit_in_bytes", "2147483648");
  write(root / "memory/memory.limit_in_bytes", "9223372036854771712");
  EXPECT_EQ(spip::pipeline::cgroup_limit_bytes(root, "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n"),
            2147483648.0);
  EXPECT_EQ(spip::pipeline::cgroup_limit_bytes(root, "4:cpu:/docker/abc\n"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(spip::pipeline::cgroup_limit_bytes(root, "0::/elsewhere\n"), std::numeric_limits<double>::infinity());
}

// Without parallel.memory_gb the ranks of a node share what Slurm gave the job there.
TEST(MemoryBudget, TheDefaultBudgetSharesWhatSlurmGaveTheJob) {
  // The test may itself run in a Slurm job: its variables are set aside, then restored.
  const char* names[] = {"SLURM_MEM_PER_NODE", "SLURM_MEM_PER_CPU", "SLURM_CPUS_ON_NODE"};
  std::vector<std::pair<std::string, std::string>> saved;
  for (const char* name : names)
    if (const char* value = std::getenv(name)) saved.emplace_back(name, value);
  for (const char* name : names) unsetenv(name);
  const spip::ParallelConfig unset;
  const double whole = spip::pipeline::memory_budget_bytes(unset, 1);
  ASSERT_GT(whole, 1e9) << "a cgroup limit below 1 GB leaves Slurm's figures below nothing to compare";
  setenv("SLURM_MEM_PER_NODE", "1024", 1);
  EXPECT_EQ(spip::pipeline::memory_budget_bytes(unset, 4), 256.0 * (1 << 20));
  setenv("SLURM_MEM_PER_NODE", "4G", 1);  // not Slurm's form: not read as 4 MB
  EXPECT_EQ(spip::pipeline::memory_budget_bytes(unset, 1), whole);
  unsetenv("SLURM_MEM_PER_NODE");
  setenv("SLURM_MEM_PER_CPU", "100", 1);
  setenv("SLURM_CPUS_ON_NODE", "8", 1);
  EXPECT_EQ(spip::pipeline::memory_budget_bytes(unset, 2), 400.0 * (1 << 20));
  for (const char* name : names) unsetenv(name);
  EXPECT_EQ(spip::pipeline::memory_budget_bytes(unset, 1), whole);
  for (const auto& [name, value] : saved) setenv(name.c_str(), value.c_str(), 1);
}

// Every row of a channel is read and staged, flagged or not: the imaging needs of a
// channel grow with its rows, and an input.block_channels that two blocks of cannot
// fit is refused in one line rather than run past the budget.
TEST(MemoryBudget, AFixedBlockWidthThatCannotFitIsRefused) {
  spip::pipeline::MemoryNeeds needs = needs_of(0.2e9, 128, 80640, 32, 1e5);
  needs.block_channels = 32;
  try {
    spip::pipeline::plan_memory(needs);
    FAIL() << "32 channels of 80640 rows in each of two blocks fit 0.2 GB";
  } catch (const spip::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("input.block_channels 32"), std::string::npos) << e.what();
  }
  needs.block_channels = 4;
  EXPECT_EQ(spip::pipeline::plan_memory(needs).block_channels, 4);
  needs.block_channels = 64;  // beyond the rank's channels: its channels
  needs.budget = 1e9;
  EXPECT_EQ(spip::pipeline::plan_memory(needs).block_channels, 32);
}

// On another imager's cubes, rank 0's catalogue holds its maps after the Faraday stage:
// 2048^2 cubes on a 0.13 GB budget peaked at 0.23 GB with a catalogue and 0.095 GB
// without. Its maps count, and kept planes that cannot sit beside them spill.
TEST(MemoryBudget, OnCubesTheCatalogueMapsCount) {
  const double pixels = 2048.0 * 2048.0, row = 1e5, plane = 12 * pixels;
  EXPECT_NO_THROW(spip::pipeline::plan_cube_memory(0.13e9, row, plane, 0, 0));
  try {
    spip::pipeline::plan_cube_memory(0.13e9, row, plane, 0, spip::pipeline::catalogue_bytes(pixels));
    FAIL() << "a catalogue of 2048^2 maps fit 0.13 GB";
  } catch (const spip::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("catalogue"), std::string::npos) << e.what();
  }
  const double kept = 0.1e9;
  EXPECT_FALSE(spip::pipeline::plan_cube_memory(0.4e9, row, plane, kept, 0).kept_spilled);
  EXPECT_TRUE(spip::pipeline::plan_cube_memory(0.4e9, row, plane, kept, spip::pipeline::catalogue_bytes(pixels) * 1.5)
                  .kept_spilled);
}

// A budget below what the process itself holds is refused as that, on a Measurement Set
// or on cubes, not as too many Faraday depths or too large an image.
TEST(MemoryBudget, ABudgetBelowTheProcessItselfIsRefusedAsThat) {
  const spip::pipeline::MemoryNeeds needs = needs_of(0.05e9, 16, 10, 1, 1e3);
  for (const std::string& why : {refusal([&] { spip::pipeline::plan_memory(needs); }),
                                 refusal([&] { spip::pipeline::plan_cube_memory(needs.budget, 1e3, 1e3, 0, 0); })}) {
    EXPECT_NE(why.find("the process itself holds"), std::string::npos) << "refused as: '" << why << "'";
    EXPECT_EQ(why.find("Faraday"), std::string::npos) << why;
  }
}
