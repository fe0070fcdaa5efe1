#pragma once
// One rank's share of a spip run: plan, read its channel block, write its products.
#include <string>
#include <vector>

#include "spip/config/config.hpp"

namespace spip::parallel {
class MpiContext;
}

namespace spip::pipeline {

class Log;

struct Products {
  std::vector<std::string> paths;  // complete products, known on rank 0
};

// Runs the stages for this rank. Input problems that every rank detects alike (bad
// MS, wrong selection, no GPU) throw before any collective call, so all ranks exit
// with the same code and no rank waits for another.
Products run(const Config& config, const parallel::MpiContext& mpi, const Log& log);

}  // namespace spip::pipeline
