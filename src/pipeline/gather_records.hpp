#pragma once
// QA records of every rank gathered on rank 0 through their JSON. Private to src/pipeline.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spip/parallel/mpi_context.hpp"

namespace spip::pipeline {

// Every rank's records on rank 0, in rank order (other ranks get {}).
template <typename Record>
std::vector<Record> gather_records(const std::vector<Record>& mine, const parallel::MpiContext& mpi) {
  std::vector<Record> all;
  for (const std::string& text : mpi.gather_text_to_root(nlohmann::ordered_json(mine).dump())) {
    const std::vector<Record> theirs = nlohmann::ordered_json::parse(text).get<std::vector<Record>>();
    all.insert(all.end(), theirs.begin(), theirs.end());
  }
  return all;
}

}  // namespace spip::pipeline
