#pragma once
// The Faraday stage alone, on another imager's cubes (input.cube_q, ...). Private to
// src/pipeline: pipeline::run() takes this path where the configuration names cubes.
#include "spip/config/config.hpp"
#include "spip/job/plan.hpp"
#include "spip/pipeline/pipeline.hpp"

namespace spip::pipeline {

class StopRequest;

// Collective, after make_cube_plan: each rank measures its block of channels, then takes
// its slab of rows of every cube through the Faraday stage; rank 0 writes qa.json.
CommittedProducts run_on_cubes(const Config& config, const CubePlan& plan, const parallel::MpiContext& mpi,
                               const Log& log, StopRequest& stop);

}  // namespace spip::pipeline
