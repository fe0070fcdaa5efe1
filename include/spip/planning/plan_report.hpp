#pragma once
// spip --plan's report.
#include <ostream>
#include <string>

#include "spip/config/config.hpp"

namespace spip::pipeline {

// spip --plan: the job's figures for `ranks` ranks (0: the ranks it runs on) from the
// inputs' metadata and rates timed on this machine, with what to ask sbatch for.
// Not collective: call it on one rank. `previous_qa` (optional) is a qa.json whose
// measured times replace the rates timed here.
struct PlanRequest {
  int ranks = 0;
  std::string previous_qa;
  int node_ranks = 0;  // ranks sharing a node's memory; 0: as many as this node's cores (and GPUs) hold
};
void print_plan(const Config& config, const PlanRequest& request, int mpi_ranks, std::ostream& out);

}  // namespace spip::pipeline
