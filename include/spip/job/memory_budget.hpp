#pragma once
// What a rank will hold and what a run will write, computed from metadata before any
// visibility is read, so that a run that cannot fit stops with one line instead of
// std::bad_alloc or a full disk half-way through.
#include <filesystem>
#include <string>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/imaging/geometry.hpp"

namespace spip::pipeline {

// Bytes of this rank's memory budget per use. Imaging holds the grids, w-screens and
// image sets of the channel being imaged and of the one being written; channel data is
// one channel's staged visibilities with the gridder's per-point tables (current and
// next); the MS is read in blocks of channels (current and read ahead).
struct MemoryPlan {
  double budget = 0;
  double process = 0;        // what the process holds before any of the rest
  double kept_heap = 0;      // freed memory the heap keeps for reuse (keep_freed_memory())
  double imaging = 0;
  double channel_data = 0;
  double block = 0;          // one block; two are held
  int block_channels = 1;
  double faraday_group = 0;  // one row group of the Faraday stage
  double kept = 0;           // the planes a rank keeps of its channels (PlaneStore)
  bool kept_spilled = false; // kept in parallel.scratch: they do not fit beside the rest
  double catalogue = 0;      // rank 0's maps for the catalogue, after the Faraday stage (on cubes)
  std::string describe() const;
};

struct MemoryNeeds {
  double budget = 0;               // bytes
  imaging::ImageGeometry geometry;
  double rows_per_channel = 0;     // visibilities of one channel over every input MS
  double clean_bytes_per_pixel = 0;  // clean_bytes_per_pixel() of the run's CLEAN
  double row_bytes = 0;            // imaging_bytes_per_row() of the run
  int my_channels = 0;
  int block_channels = 0;          // input.block_channels; 0: from the budget
  double faraday_row_bytes = 0;    // one image row of the Faraday stage, the least it needs
  double kept_bytes = 0;           // the planes this rank keeps of its channels for restoring and the Faraday stage
  int pointings = 1;               // a mosaic's: each channel's sums and its pointings' models
};

// What the configured CLEAN holds in host memory per image pixel beside the images:
// the sub-minor loop's (deconv::subminor_bytes_per_pixel) or multiscale's
// (deconv::MultiscaleClean::bytes_per_pixel), or on a GPU the host copies its minor
// cycles need (its multiscale transforms are on the device).
double clean_bytes_per_pixel(const CleanConfig& clean, const imaging::ImageGeometry& geometry, bool gpu);

// What imaging holds in host memory per row of a channel beside the channel's own data:
// the CPU gridder's points (imaging::Gridder::bytes_per_visibility; counted for a GPU
// rank too, whose points are on the device, so that both backends get one plan) and,
// for point CLEAN, the gridder of the PSF of twice the image's side while it makes that
// PSF, on either backend (deconv::minor_psf_bytes_per_row).
double imaging_bytes_per_row(const ImageConfig& image, const CleanConfig& clean,
                             const imaging::ImageGeometry& geometry);

// What the configured CLEAN holds on a GPU beside cuda::DeviceImager::device_bytes:
// multiscale's cuFFT convolver (cuda::scale_convolver_device_bytes).
double clean_device_bytes(const CleanConfig& clean, int image_size);

// What imaging one channel of `rows_per_channel` visibilities holds, the process's own
// memory (MemoryPlan::process) included: the images and
// grids, CLEAN's buffers, a mosaic's sums and `pointings` models, the channel's data
// with `row_bytes` (imaging_bytes_per_row()) per row, and two read blocks of one channel.
double channel_imaging_bytes(const imaging::ImageGeometry& geometry, double rows_per_channel,
                             double clean_bytes_per_pixel, double row_bytes, int pointings = 1);

// Throws ConfigError naming the bytes needed and allowed when imaging one channel, or
// the Faraday stage's smallest row group, cannot fit the budget.
MemoryPlan plan_memory(const MemoryNeeds& needs);

// The Faraday stage alone, on another imager's cubes: its row groups, the planes of one
// channel (`plane_bytes`) that measuring the channels' noise (and convolving them to one
// beam) takes at a time (MemoryPlan::block), and the convolved planes a rank keeps of its
// channels (`kept_bytes`), in memory where they fit, and rank 0's catalogue maps
// (`catalogue_bytes`, 0 elsewhere). Throws ConfigError where one row and the planes, or
// the catalogue's maps, cannot fit.
MemoryPlan plan_cube_memory(double budget, double faraday_row_bytes, double plane_bytes, double kept_bytes,
                            double catalogue_bytes);

// This node's physical memory.
double physical_memory_bytes();
// The memory this job may use on this node: the physical memory, or less where its cgroup
// limits it or Slurm gave it less (SLURM_MEM_PER_NODE, or SLURM_MEM_PER_CPU times
// SLURM_CPUS_ON_NODE).
double node_memory_bytes();
// parallel.memory_gb in bytes, or a node's memory (by default this job's share of this
// node's) shared by its `local_ranks`.
double memory_budget_bytes(const ParallelConfig& config, int local_ranks, double node_bytes = node_memory_bytes());
// The least memory limit of the cgroups that /proc/self/cgroup's text names, and of those
// above them, under `cgroup_root` (v2's memory.max, v1's memory/memory.limit_in_bytes);
// infinity where none is set.
double cgroup_limit_bytes(const std::filesystem::path& cgroup_root, const std::string& self_cgroup);

// Bytes of a FITS file holding `pixels` float32 values (header and padding included).
double fits_bytes(double pixels);

// Throws InputError naming both numbers when `dir` (or the nearest existing parent)
// has less free space than `needed` bytes.
void require_disk_space(const std::string& dir, double needed);

}  // namespace spip::pipeline
