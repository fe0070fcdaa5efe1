#pragma once
// The steps that start every run, of Measurement Sets or of another imager's cubes:
// agreeing on a failure, claiming the output, writing the effective configuration.
// Private to src/planning.
#include <exception>
#include <memory>
#include <optional>

#include "spip/config/config.hpp"
#include "spip/cuda/device.hpp"
#include "spip/job/product_registry.hpp"
#include "spip/job/run_claim.hpp"

#include "spip/parallel/mpi_context.hpp"

namespace spip::pipeline {

class Log;

// A planning step may fail on some ranks only (a node without a GPU, a read error in
// one share of the rows), or on all of them. If any failed, every rank throws a
// JobFailure with the code of the lowest failing rank, and rank 0's holds each
// different message once, so that all ranks leave together and the job says why in
// one line.
void agree_on_failure(const parallel::MpiContext& mpi, const std::exception_ptr& local);

// The GPU this rank works on, if any (local rank modulo the visible devices:
// CUDA_VISIBLE_DEVICES, which Slurm's --gpus-per-task sets per task), and its share of the
// device's free memory among the node's ranks on it. Collective; every rank fails alike
// where parallel.device = gpu and one has none.
struct RankDevice {
  std::optional<cuda::DeviceInfo> device;
  parallel::MpiContext::NodeShare share;
  std::string backend() const { return device ? "gpu " + std::to_string(device->index) : "cpu"; }
  int index() const { return device ? device->index : -1; }
  std::size_t share_bytes() const { return device ? share.each() : 0; }
};
RankDevice choose_rank_device(const Config& config, const parallel::MpiContext& mpi, const Log& log);

// Rank 0's claim on the output folder and prefix.
std::unique_ptr<RunClaim> claim_run(const Config& config, const ProductRegistry& products, bool break_claim,
                                    const parallel::MpiContext& mpi, const Log& log);

// Once the run is known to start: a usable parallel.scratch on every rank whose kept
// planes spill there, no input among the names of the prefix's products, and the
// effective configuration next to the products.
void prepare_output(const Config& config, const ProductRegistry& products, bool spills,
                    const parallel::MpiContext& mpi, const Log& log);

}  // namespace spip::pipeline
