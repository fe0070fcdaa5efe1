#pragma once
// The image planes a rank keeps of its own channels for the stages after imaging:
// restoring with the job's beam and the Faraday stage read them here, not back from the
// products. In memory where the rank's budget allows; otherwise in an unnamed file of a
// node-local scratch folder (parallel.scratch), never in the shared output.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace spip::pipeline {

// A channel's slots: Stokes s (I, Q, U, V) of its restored image, or of its model until
// restoring, at kept_image + s; of its residual at kept_residual + s.
inline constexpr int kept_image = 0, kept_residual = 4;
// A mosaic's channel until restoring: pointing p's model at kept_model(p) + s (the
// residual slots hold the mosaic's residual).
inline constexpr int kept_model(int pointing) { return 8 + 4 * pointing; }

class PlaneStore {
 public:
  // `channels` channels of `slots` planes of `pixels` floats; in memory with an empty
  // `scratch_dir`, else in a file there that is gone when the store is (or the process).
  PlaneStore(int channels, int slots, std::size_t pixels, const std::string& scratch_dir);
  ~PlaneStore();
  PlaneStore(const PlaneStore&) = delete;
  PlaneStore& operator=(const PlaneStore&) = delete;

  // Safe from several threads for distinct channels.
  void put(int channel, int slot, const float* plane);
  // The plane no longer needed (a mosaic's pointing's model once restored): its memory
  // freed; read() then gives NaN. In a scratch file its bytes stay until the store goes.
  void release(int channel, int slot);
  // Pixels [first, first + count) of a plane into `out`: NaN where nothing was put (a
  // blanked channel).
  void read(int channel, int slot, std::size_t first, std::size_t count, float* out) const;

  // Throws InputError in one line where no file can be made in `scratch_dir` (made if
  // missing): what the planner asks of every rank whose planes will spill, before it starts.
  static void check_scratch(const std::string& scratch_dir);

  bool spilled() const { return fd_ >= 0; }
  double scratch_bytes_read() const { return scratch_read_; }
  // The bytes a store of this shape holds.
  static double bytes(int channels, int slots, std::size_t pixels);

 private:
  std::size_t index(int channel, int slot) const;

  int slots_;
  std::size_t pixels_;
  std::string scratch_dir_;
  int fd_ = -1;
  std::vector<std::vector<float>> planes_;  // in memory
  std::vector<std::uint8_t> present_;
  mutable double scratch_read_ = 0;
};

}  // namespace spip::pipeline
