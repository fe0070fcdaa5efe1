#include "spip/job/plan.hpp"

#include <algorithm>
#include <cstdlib>

#include "spip/common/constants.hpp"

namespace spip::pipeline {

bool restores_later(const Config& config) {
  return config.clean.niter > 0 && config.image.common_beam && !(config.image.beam_major_arcsec > 0);
}

std::vector<ChannelCubeKind> cubes_to_recall(const Plan& plan, bool restored) {
  if (!restored) return {ChannelCubeKind::model, ChannelCubeKind::residual};
  if (!plan.polarised()) return {};
  if (!plan.products.made(ChannelCubeKind::residual)) return {ChannelCubeKind::image};
  return {ChannelCubeKind::image, ChannelCubeKind::residual};
}

std::vector<ChannelCubeKind> cubes_to_resume_from(const Config& config, const Plan& plan) {
  std::vector<ChannelCubeKind> kinds = cubes_to_recall(plan, true);
  if (restores_later(config) && !plan.mosaic())
    for (ChannelCubeKind kind : cubes_to_recall(plan, false))
      if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  return kinds;
}

bool resumes_finished_channels(const Config& config, const Plan& plan) {
  const std::vector<ChannelCubeKind> kinds = cubes_to_resume_from(config, plan);
  return std::all_of(kinds.begin(), kinds.end(), [&](ChannelCubeKind kind) { return plan.products.on_disk(kind); });
}

int kept_planes(const Config& config, const Plan& plan) {
  // A mosaic keeps its residual and each pointing's model until restoring.
  if (restores_later(config)) return (plan.mosaic() ? 1 + static_cast<int>(plan.pointings.size()) : 2) * ms::num_stokes;
  if (!plan.polarised()) return 0;
  return config.clean.niter > 0 ? 2 * ms::num_stokes : ms::num_stokes;
}

int kept_slots(const Plan& plan) {
  return (2 + (plan.mosaic() ? static_cast<int>(plan.pointings.size()) : 0)) * ms::num_stokes;
}

std::string scratch_folder(const ParallelConfig& config) {
  if (!config.scratch.empty()) return config.scratch;
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir && *tmpdir ? tmpdir : "/tmp";
}

imaging::WeightingScheme weighting_scheme(const Config& config) {
  imaging::WeightingScheme scheme;
  scheme.mode = config.image.weighting;
  scheme.robust = config.image.robust;
  scheme.uv_min = config.image.uv_min;
  scheme.uv_max = config.image.uv_max;
  scheme.taper_fwhm_rad = config.image.taper_arcsec / rad_to_arcsec;
  return scheme;
}

double kept_max_uv(const Config& config, double max_uv) {
  return config.image.uv_max > 0 ? std::min(max_uv, config.image.uv_max) : max_uv;
}

std::vector<double> inputs_uvw_m(const Plan& plan, std::vector<std::size_t>* rows_per_input) {
  std::vector<double> uvw;
  for (std::size_t i = 0; i < plan.readers.size(); ++i) {
    std::vector<double> rows = plan.readers[i].uvw_m();
    if (plan.rephasing[i]) plan.rephasing[i]->rotate_uvw(rows.data(), rows.size() / 3);
    uvw.insert(uvw.end(), rows.begin(), rows.end());
    if (rows_per_input) rows_per_input->push_back(rows.size() / 3);
  }
  return uvw;
}

}  // namespace spip::pipeline
