#pragma once
// The ranks that share one channel's rows (parallel.ranks_per_channel): what imaging and
// CLEAN need from the others so that a channel split over a group images as it would on
// one rank with all its rows. The pipeline implements it over MPI; a channel that one
// rank images has none (a null RowGroup pointer). C++17: CUDA sources include it.
#include <array>
#include <cstddef>
#include <vector>

namespace spip::imaging {

class RowGroup {
 public:
  virtual ~RowGroup() = default;
  // The member that runs the minor cycles and writes the channel's products.
  virtual bool leads() const = 0;
  // Element-wise sums over the group, in place: the same bits on every member, so that
  // every member goes on from the same images.
  virtual void sum(float* values, std::size_t count) const = 0;
  virtual void sum(double* values, std::size_t count) const = 0;
  virtual double max(double value) const = 0;
  // The leader's values on every member, in place.
  virtual void from_leader(float* values, std::size_t count) const = 0;
  virtual int from_leader(int value) const = 0;

  template <class T>
  void sum(std::vector<T>& values) const {
    sum(values.data(), values.size());
  }
  template <class T, std::size_t n>
  void sum(std::array<T, n>& values) const {
    sum(values.data(), n);
  }
  void from_leader(std::vector<float>& values) const { from_leader(values.data(), values.size()); }
};

}  // namespace spip::imaging
