#include "spip/job/memory_budget.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>

#include "spip/common/free_space.hpp"
#include "spip/common/freed_memory.hpp"
#include "spip/cuda/scale_convolver.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/deconv/multiscale.hpp"
#include "spip/error.hpp"
#include "spip/faraday/spectrum_math.hpp"
#include "spip/imaging/fft.hpp"
#include "spip/job/log.hpp"

namespace spip::pipeline {
namespace {

constexpr double gb = 1e9;
// Per image pixel: two sets of dirty, model, residual, restored (4 Stokes each) and PSF
// floats (2 x 68 B: the channel being imaged and the one on the writer thread; a dirty
// run holds a zero model and a residual equal to the dirty image too), and the
// gridder's double-precision image sums and w-screens: 36 B, from heaptrack's peak on the
// first 24 channels of bench/run-budget-bench.sh's dirty run, 0.34 GB, less the grids,
// the channel data and the read blocks below.
constexpr double imaging_bytes_per_pixel = 172;
// Per image pixel with CLEAN: restoring's FFT buffers where it convolves by FFT (64 B:
// the beam's and a plane pair's transforms).
constexpr double cleaned_images_bytes_per_pixel = 64;
// Per grid cell: two complex float grids (the packed Stokes lanes).
constexpr double imaging_bytes_per_cell = 16;
// Per image pixel of a mosaic's channel: its sums of the pointings' dirty, residual and
// restored planes and of their weights (56 B), and per pointing its model where
// restoring waits for the channel's beam (16 B; none with image.beam).
constexpr double mosaic_bytes_per_pixel = 56, mosaic_bytes_per_pixel_and_pointing = 16;
// Per visibility of a channel beside imaging_bytes_per_row(): the rows' coordinates (read
// once, with their order by uv distance), the staged data (4 complex values, 4 weights;
// on the CPU also uvw in wavelengths) for the current and the next channel, and the
// model and residual visibilities of the major cycles.
constexpr double channel_bytes_per_row = 350;
// Per visibility and channel of a read block: 4 complex values and 4 weights.
constexpr double block_bytes_per_row = 48;
// What a CPU rank holds before it allocates anything for its channels: its libraries'
// code and data, MPI's, casacore's open tables and the heap's own slack. Resident
// memory when a run of bench/run-budget-bench.sh's set had planned was 49-57 MB (2 and 1
// ranks); rounded up for the code that runs later (FFTW's, OpenBLAS's, CFITSIO's). A
// GPU rank's CUDA context and cuBLAS (0.15 GB, opened when first used) are not counted.
constexpr double process_bytes = 0.06e9;
// Reading wider blocks saves passes over the MS (its tiles hold every channel), but
// nothing beyond this.
constexpr double block_cap = 1.0 * (1u << 30);
// A Faraday row group gains nothing beyond this: the cgemm is as fast on 10^4 pixels as
// on 10^6, and RM-CLEAN works pixel by pixel.
constexpr double faraday_group_cap = 256.0 * (1u << 20);

std::string gigabytes(double bytes) { return fixed(bytes / gb, bytes < 0.1 * gb ? 3 : 2) + " GB"; }

// The images, grids and CLEAN's buffers of one channel, whatever its visibilities, and a
// mosaic's pointings' images.
double image_bytes(const imaging::ImageGeometry& geometry, double clean_bytes_per_pixel, int pointings) {
  const double pixels = static_cast<double>(geometry.size) * geometry.size;
  const double cells = static_cast<double>(geometry.grid_size) * imaging::Fft2d::row_pitch(geometry.grid_size);
  const double mosaic = pointings > 1 ? mosaic_bytes_per_pixel + mosaic_bytes_per_pixel_and_pointing * pointings : 0.0;
  // CLEAN's buffers are zero exactly where no CLEAN runs (clean_bytes_per_pixel()).
  const double cleaned = clean_bytes_per_pixel > 0 ? cleaned_images_bytes_per_pixel : 0.0;
  return (imaging_bytes_per_pixel + cleaned + clean_bytes_per_pixel + mosaic) * pixels + imaging_bytes_per_cell * cells;
}

}  // namespace

std::string MemoryPlan::describe() const {
  return "memory budget of " + gigabytes(budget) + " per rank, planned as: the process itself " + gigabytes(process) +
         ", freed memory kept for reuse " + gigabytes(kept_heap) + ", imaging " +
         gigabytes(imaging) + ", channel data " +
         gigabytes(channel_data) + ", read blocks 2 x " + gigabytes(block) + " (" + std::to_string(block_channels) +
         " channels), Faraday row groups " + gigabytes(faraday_group) + ", kept planes " + gigabytes(kept) +
         (kept_spilled ? " in parallel.scratch" : " in memory") +
         (catalogue > 0 ? ", the catalogue's maps " + gigabytes(catalogue) : "");
}

double clean_bytes_per_pixel(const CleanConfig& clean, const imaging::ImageGeometry& geometry, bool gpu) {
  if (clean.niter <= 0) return 0;
  using deconv::MultiscaleClean;
  const int n = geometry.size;
  // The GPU backend keeps host copies of the residual (the noise estimate) and of a
  // second image set (a group's sums, multiscale's model), and runs multiscale's minor
  // cycles on the host with the mask and its two convolvers' complex input planes there too;
  // point CLEAN makes its PSF of twice the image's side on the host.
  constexpr double gpu_images = 2 * 4 * 4.0, gpu_multiscale = 1 + 2 * 8;
  if (gpu)
    return gpu_images + (clean.multiscale ? gpu_multiscale + MultiscaleClean::bytes_per_pixel(clean.scales, n, false)
                                          : deconv::minor_psf_bytes_per_pixel(geometry));
  // On the CPU the divergence guard keeps a copy of the model (4 Stokes); point CLEAN
  // holds the PSF of twice the side (4 floats per pixel) through its sub-minor loop.
  constexpr double kept_model = 4 * sizeof(float), wide_psf = 4 * sizeof(float);
  if (clean.multiscale) return kept_model + MultiscaleClean::bytes_per_pixel(clean.scales, n, true);
  const double subminor = clean.subminor ? deconv::subminor_bytes_per_pixel(n) : 0;
  return kept_model + std::max(deconv::minor_psf_bytes_per_pixel(geometry), wide_psf + subminor);
}

double clean_device_bytes(const CleanConfig& clean, int image_size) {
  if (clean.niter <= 0 || !clean.multiscale) return 0;
  const auto shape = deconv::MultiscaleClean::convolver_shape(clean.scales, image_size);
  return static_cast<double>(cuda::scale_convolver_device_bytes(image_size, shape.reach, shape.filters) +
                             cuda::scale_convolver_device_bytes(image_size, shape.smoothing_reach, shape.filters - 1));
}

double imaging_bytes_per_row(const ImageConfig& image, const CleanConfig& clean,
                             const imaging::ImageGeometry& geometry) {
  const bool wide_psf = clean.niter > 0 && !clean.multiscale;
  return imaging::Gridder::bytes_per_visibility(geometry, image.accuracy, image.wstacking) +
         (wide_psf ? deconv::minor_psf_bytes_per_row(geometry, image.accuracy) : 0.0);
}

double channel_imaging_bytes(const imaging::ImageGeometry& geometry, double rows_per_channel,
                             double clean_bytes_per_pixel, double row_bytes, int pointings) {
  return process_bytes + image_bytes(geometry, clean_bytes_per_pixel, pointings) +
         (channel_bytes_per_row + row_bytes) * rows_per_channel + 2 * std::max(1.0, block_bytes_per_row * rows_per_channel);
}

namespace {

// A budget below the process's own bytes leaves nothing to image or transform with, and
// no choice of depths or image size helps: said so, rather than blaming either.
void refuse_below_process(double budget) {
  if (budget <= process_bytes)
    SPIP_THROW(ConfigError, "parallel.memory_gb allows " + gigabytes(budget) + " per rank, no more than the " +
                                gigabytes(process_bytes) + " the process itself holds; expected more memory, or 0 for "
                                "the node's memory over its ranks");
}

}  // namespace

MemoryPlan plan_memory(const MemoryNeeds& needs) {
  refuse_below_process(needs.budget);
  MemoryPlan plan;
  plan.budget = needs.budget;
  plan.process = process_bytes;
  const double pixels = static_cast<double>(needs.geometry.size) * needs.geometry.size;
  plan.imaging = image_bytes(needs.geometry, needs.clean_bytes_per_pixel, needs.pointings);
  plan.channel_data = (channel_bytes_per_row + needs.row_bytes) * needs.rows_per_channel;
  const double block_per_channel = std::max(1.0, block_bytes_per_row * needs.rows_per_channel);
  const double needed = channel_imaging_bytes(needs.geometry, needs.rows_per_channel, needs.clean_bytes_per_pixel,
                                              needs.row_bytes, needs.pointings);
  if (needed > plan.budget)
    SPIP_THROW(ConfigError, "imaging " + std::to_string(needs.geometry.size) + "^2 pixels (a " +
                                std::to_string(needs.geometry.grid_size) + "^2 grid) with channels of " +
                                fixed(needs.rows_per_channel, 0) + " visibilities needs " + gigabytes(needed) +
                                " per rank (the process itself " + gigabytes(process_bytes) +
                                (needs.clean_bytes_per_pixel > 0
                                     ? ", CLEAN's buffers " + gigabytes(needs.clean_bytes_per_pixel * pixels)
                                     : "") +
                                "), but parallel.memory_gb allows " + gigabytes(plan.budget) +
                                "; use a smaller image.size or image.padding, fewer or narrower clean.scales with "
                                "multiscale CLEAN, fewer ranks per node, or more memory");
  if (needed + needs.faraday_row_bytes > plan.budget)
    SPIP_THROW(ConfigError, "the Faraday stage needs " + gigabytes(needs.faraday_row_bytes) +
                                " per rank for one image row of its spectra besides the " + gigabytes(needed) + " of the process and imaging" +
                                ", but parallel.memory_gb allows " + gigabytes(plan.budget) +
                                "; use fewer Faraday depths (faraday.phi_max, faraday.dphi) or more memory");

  double left = plan.budget - plan.process - plan.imaging - plan.channel_data;
  const int channels = std::max(1, needs.my_channels);
  plan.block_channels = needs.block_channels > 0
                            ? std::min(needs.block_channels, channels)
                            : std::clamp(static_cast<int>(std::min(block_cap, 0.25 * left) / block_per_channel), 1, channels);
  plan.block = plan.block_channels * block_per_channel;
  if (needs.block_channels > 0 && 2 * plan.block + needs.faraday_row_bytes > left)
    SPIP_THROW(ConfigError, "input.block_channels " + std::to_string(needs.block_channels) + " reads blocks of " +
                                gigabytes(plan.block) + " (two are held), but parallel.memory_gb leaves " +
                                gigabytes(left - needs.faraday_row_bytes) + " beside imaging; use at most " +
                                std::to_string(std::max(0, static_cast<int>((left - needs.faraday_row_bytes) /
                                                                            (2 * block_per_channel)))) +
                                ", or 0 to size them from the budget");
  left -= 2 * plan.block;
  // Kept planes in memory save a pass through the scratch disk; the Faraday stage's
  // smallest row group must still fit beside them.
  plan.kept = needs.kept_bytes;
  plan.kept_spilled = needs.kept_bytes + needs.faraday_row_bytes > left;
  if (!plan.kept_spilled) left -= needs.kept_bytes;
  // Freed memory kept for reuse comes out of what the blocks, the kept planes and the
  // smallest row group leave: a tight budget (or wide input.block_channels) keeps less,
  // or none, rather than fail or spill.
  plan.kept_heap = std::clamp(left - needs.faraday_row_bytes, 0.0, kept_heap_bytes(plan.budget));
  // The Faraday stage starts once the imaging, the channel data and the blocks are freed:
  // its row groups take half of what the process, the heap's kept blocks and the kept
  // planes leave. Sized beside the imaging, a 1024^2 multiscale run had groups of one row.
  const double after_imaging = plan.budget - plan.process - plan.kept_heap - (plan.kept_spilled ? 0.0 : plan.kept);
  plan.faraday_group = std::max(needs.faraday_row_bytes, std::min(0.5 * after_imaging, faraday_group_cap));
  return plan;
}

MemoryPlan plan_cube_memory(double budget, double faraday_row_bytes, double plane_bytes, double kept_bytes,
                            double catalogue_bytes) {
  refuse_below_process(budget);
  MemoryPlan plan;
  plan.budget = budget;
  plan.process = process_bytes;
  plan.block = plane_bytes;
  plan.catalogue = catalogue_bytes;
  if (process_bytes + plane_bytes + faraday_row_bytes > budget)
    SPIP_THROW(ConfigError, "the Faraday stage on the cubes needs " + gigabytes(faraday_row_bytes) +
                                " per rank for one image row of its spectra and " + gigabytes(plane_bytes) +
                                " for a channel's planes beside the process's own " + gigabytes(process_bytes) +
                                ", but parallel.memory_gb allows " + gigabytes(budget) +
                                "; use fewer Faraday depths (faraday.phi_max, faraday.dphi) or more memory");
  if (process_bytes + catalogue_bytes > budget)
    SPIP_THROW(ConfigError, "the catalogue holds " + gigabytes(catalogue_bytes) + " of maps on rank 0 beside the "
                                "process's own " + gigabytes(process_bytes) + ", but parallel.memory_gb allows " +
                                gigabytes(budget) + "; use more memory, or catalogue.threshold 0 and no catalogue.sources");
  // As after imaging: convolved planes stay in memory where they fit beside the least
  // row group and, later, beside the catalogue's maps; else they go to parallel.scratch.
  double left = budget - process_bytes;
  plan.kept = kept_bytes;
  plan.kept_spilled = kept_bytes + faraday_row_bytes > left - plane_bytes || kept_bytes + catalogue_bytes > left;
  if (!plan.kept_spilled) left -= kept_bytes;
  plan.faraday_group = std::max(faraday_row_bytes, std::min(0.5 * left, faraday_group_cap));
  return plan;
}

namespace {

// A limit file's bytes; infinity for "max", a missing file or an unset limit (cgroup v1
// writes one near 2^63).
double limit_in(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text == "max") return std::numeric_limits<double>::infinity();
  try {
    const double bytes = std::stod(text);
    return bytes > 0 && bytes < 0x1p60 ? bytes : std::numeric_limits<double>::infinity();
  } catch (const std::exception&) {
    return std::numeric_limits<double>::infinity();
  }
}

// The least of `file` in the cgroup folder `path` and in each folder above it, up to `root`.
double least_up_the_tree(const std::filesystem::path& root, std::string path, const char* file) {
  double least = limit_in(root / file);
  while (!path.empty() && path != "/") {
    least = std::min(least, limit_in(root / path.substr(1) / file));
    path = path.substr(0, path.rfind('/'));
  }
  return least;
}

double megabytes_from(const char* variable) {
  const char* text = std::getenv(variable);
  if (!text) return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  const double mb = std::strtod(text, &end);
  // Slurm writes plain megabytes; anything else ("4G" set by hand) is not read as a limit.
  return end != text && *end == '\0' && mb > 0 ? mb * (1u << 20) : std::numeric_limits<double>::infinity();
}

}  // namespace

double cgroup_limit_bytes(const std::filesystem::path& cgroup_root, const std::string& self_cgroup) {
  double least = std::numeric_limits<double>::infinity();
  std::istringstream lines(self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    // "0::/path" (v2), or "4:memory:/path" (v1, controllers maybe comma-joined).
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::istringstream controllers(line.substr(first + 1, second - first - 1));
    const std::string path = line.substr(second + 1);
    if (second == first + 1) least = std::min(least, least_up_the_tree(cgroup_root, path, "memory.max"));
    for (std::string controller; std::getline(controllers, controller, ',');)
      if (controller == "memory")
        least = std::min(least, least_up_the_tree(cgroup_root / "memory", path, "memory.limit_in_bytes"));
  }
  return least;
}

double physical_memory_bytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
}

double node_memory_bytes() {
  double node = physical_memory_bytes();
  // A job's share of a shared node: its cgroup's limit (Slurm's ConstrainRAMSpace, a
  // container's), or what it asked Slurm for.
  std::ifstream self("/proc/self/cgroup");
  const std::string cgroups((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  node = std::min(node, cgroup_limit_bytes("/sys/fs/cgroup", cgroups));
  node = std::min(node, megabytes_from("SLURM_MEM_PER_NODE"));
  if (const char* cpus = std::getenv("SLURM_CPUS_ON_NODE"))
    node = std::min(node, megabytes_from("SLURM_MEM_PER_CPU") * std::max(1.0, std::atof(cpus)));
  return node;
}

double memory_budget_bytes(const ParallelConfig& config, int local_ranks, double node_bytes) {
  if (config.memory_gb > 0) return config.memory_gb * gb;
  return node_bytes / std::max(1, local_ranks);
}

double fits_bytes(double pixels) {
  constexpr double record = 2880;
  // A few header records (WCS, beam, history) and the data padded to whole records.
  return 4 * record + std::ceil(4.0 * pixels / record) * record;
}

void require_disk_space(const std::string& dir, double needed) {
  const std::optional<double> free = free_bytes(dir);
  if (!free) return;
  const double available = *free;
  if (needed > available)
    SPIP_THROW(InputError, "the products need " + gigabytes(needed) + " in " + dir + " but its file system has " +
                               gigabytes(available) +
                               " free; free some space, choose another output.dir, or write fewer Faraday cubes "
                               "(faraday.cubes) or depths (faraday.phi_max, faraday.dphi)");
}

}  // namespace spip::pipeline
