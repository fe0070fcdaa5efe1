#pragma once
// A rank's share of each channel's rows where a group of ranks images the same channels
// (plan.ranks_per_channel), and the group's collectives as imaging sees them.
#include <cstddef>
#include <string>
#include <vector>

#include "spip/imaging/row_group.hpp"
#include "spip/job/plan.hpp"
#include "spip/parallel/rank_group.hpp"

namespace spip::pipeline {

struct RankRows {
  std::vector<double> uvw_m;              // this rank's rows of every input, input after input, [k][3]
  std::vector<std::vector<char>> shares;  // per input, per row its reads keep: whether this rank reads it; empty: all
  std::vector<std::size_t> input_rows;    // per input, the rows this rank reads
  std::string summary;                    // for the log; empty without a group
};

// Every row; with a group of `members`, member `member`'s share: the rows ordered by
// |w| and cut into contiguous bands, so that each member's points reach only some of
// the w-planes and its gridder transforms only those, the bands balanced by what their
// rows and planes cost (row_share.cpp).
RankRows rank_rows(const Plan& plan, const ImageConfig& image, int members, int member);

// One of a RankGroup's communicators, for the imaging room.
class MpiRowGroup final : public imaging::RowGroup {
 public:
  explicit MpiRowGroup(const parallel::GroupCollectives& collectives) : collectives_(collectives) {}
  bool leads() const override { return collectives_.leads(); }
  void sum(float* values, std::size_t count) const override { collectives_.sum({values, count}); }
  void sum(double* values, std::size_t count) const override { collectives_.sum({values, count}); }
  double max(double value) const override { return collectives_.max(value); }
  void from_leader(float* values, std::size_t count) const override { collectives_.from_leader({values, count}); }
  int from_leader(int value) const override { return collectives_.from_leader(value); }

 private:
  const parallel::GroupCollectives& collectives_;
};

}  // namespace spip::pipeline
