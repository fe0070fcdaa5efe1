#include "spip/job/qa.hpp"

#include <cmath>
#include <limits>

#include "spip/common/constants.hpp"

namespace spip::pipeline {
namespace {

using json = nlohmann::ordered_json;

// null (how JSON writes NaN and Inf) back to NaN.
template <typename Key>
double number(const json& in, Key key) {
  const json& value = in.at(key);
  return value.is_null() ? std::numeric_limits<double>::quiet_NaN() : value.template get<double>();
}

// {"key": value, ...} on one line, the keys in their order: a record per line of qa.json.
std::string one_line(const json& object) {
  std::string line = "{";
  for (auto it = object.begin(); it != object.end(); ++it)
    line += (it == object.begin() ? "" : ", ") + json(it.key()).dump() + ": " + it.value().dump();
  return line + "}";
}

// [[RA, Dec], ...] in degrees, RA in [0, 360).
json pointing_list(const std::vector<Direction>& pointings) {
  json list = json::array();
  for (const Direction& d : pointings)
    list.push_back({ra_degrees(d), d.dec_rad * rad_to_deg});
  return list;
}

}  // namespace

void to_json(json& out, const ChannelQa& qa) {
  out = json{{"channel", qa.channel},
             {"freq_hz", qa.freq_hz},
             {"data_freq_hz", qa.data_freq_hz},
             {"rank", qa.rank},
             {"blank", qa.blank.empty() ? json() : json(qa.blank)},
             {"visibilities", qa.visibilities},
             {"flagged_fraction", qa.flagged_fraction},
             {"nonfinite_samples", qa.nonfinite_samples},
             {"weight_sum", qa.weight_sum},
             {"max_uv_wavelengths", qa.max_uv_wavelengths},
             {"beam_major_arcsec", qa.beam.major_rad * rad_to_arcsec},
             {"beam_minor_arcsec", qa.beam.minor_rad * rad_to_arcsec},
             {"beam_pa_deg", qa.beam.pa_rad * rad_to_deg},
             {"beam_theoretical", qa.beam_theoretical ? 1 : 0},
             {"iterations", qa.iterations},
             {"major_cycles", qa.major_cycles},
             {"scales_px", qa.scales_px},
             {"scale_iterations", qa.scale_iterations},
             {"search_noise_jy", qa.search_noise_jy},
             {"clean_threshold_jy", qa.clean_threshold_jy},
             {"threshold_reached", qa.threshold_reached ? json(*qa.threshold_reached ? 1 : 0) : json()},
             {"clean_stop", qa.clean_stop.empty() ? json() : json(qa.clean_stop)},
             {"psf_sidelobe", qa.psf_sidelobe},
             {"residual_sigma_jy", qa.residual_sigma_jy},
             {"residual_peak_jy", qa.residual_peak_jy},
             {"restored_peak_i_jy", qa.restored_peak_i_jy},
             {"dynamic_range", qa.dynamic_range},
             {"read_s", qa.read_s},
             {"image_s", qa.image_s}};
  if (!qa.mosaic_weights.empty()) out["mosaic_weights"] = qa.mosaic_weights;
}

void from_json(const json& in, ChannelQa& qa) {
  qa.channel = in.at("channel").get<int>();
  qa.freq_hz = number(in, "freq_hz");
  qa.data_freq_hz = number(in, "data_freq_hz");
  qa.rank = in.at("rank").get<int>();
  qa.blank = in.at("blank").is_null() ? std::string() : in.at("blank").get<std::string>();
  qa.visibilities = number(in, "visibilities");
  qa.flagged_fraction = number(in, "flagged_fraction");
  qa.nonfinite_samples = number(in, "nonfinite_samples");
  qa.weight_sum = number(in, "weight_sum");
  qa.max_uv_wavelengths = number(in, "max_uv_wavelengths");
  qa.beam = {number(in, "beam_major_arcsec") / rad_to_arcsec, number(in, "beam_minor_arcsec") / rad_to_arcsec,
             number(in, "beam_pa_deg") / rad_to_deg};
  qa.beam_theoretical = in.at("beam_theoretical").get<int>() != 0;
  qa.iterations = in.at("iterations").get<int>();
  qa.major_cycles = in.at("major_cycles").get<int>();
  qa.scales_px = in.at("scales_px").get<std::vector<double>>();
  qa.scale_iterations = in.at("scale_iterations").get<std::vector<int>>();
  qa.search_noise_jy = number(in, "search_noise_jy");
  qa.clean_threshold_jy = number(in, "clean_threshold_jy");
  const json& reached = in.at("threshold_reached");
  qa.threshold_reached = reached.is_null() ? std::nullopt : std::optional<bool>(reached.get<int>() != 0);
  qa.clean_stop = in.at("clean_stop").is_null() ? std::string() : in.at("clean_stop").get<std::string>();
  qa.psf_sidelobe = number(in, "psf_sidelobe");
  qa.residual_sigma_jy = number(in, "residual_sigma_jy");
  qa.residual_peak_jy = number(in, "residual_peak_jy");
  qa.restored_peak_i_jy = number(in, "restored_peak_i_jy");
  qa.dynamic_range = number(in, "dynamic_range");
  qa.read_s = number(in, "read_s");
  qa.image_s = number(in, "image_s");
  if (in.contains("mosaic_weights")) qa.mosaic_weights = in.at("mosaic_weights").get<std::vector<double>>();
}

// The beam again in radians, exactly: a resumed run restores with it.
void to_json(json& out, const ChannelMarker& marker) {
  out = json{{"qa", marker.qa},
             {"polarised_noise", marker.polarised_noise},
             {"beam_rad", {marker.qa.beam.major_rad, marker.qa.beam.minor_rad, marker.qa.beam.pa_rad}}};
}

void from_json(const json& in, ChannelMarker& marker) {
  marker.qa = in.at("qa").get<ChannelQa>();
  marker.polarised_noise = number(in, "polarised_noise");
  const json& beam = in.at("beam_rad");
  marker.qa.beam = {number(beam, 0), number(beam, 1), number(beam, 2)};
}

void to_json(json& out, const RankQa& qa) {
  out = json{{"rank", qa.rank},       {"channel_begin", qa.channel_begin}, {"channel_end", qa.channel_end},
             {"read_s", qa.read_s},   {"image_s", qa.image_s},             {"restore_s", qa.restore_s},
             {"channels_imaged", qa.channels_imaged}, {"faraday_mpi_bytes", qa.faraday_mpi_bytes},
             {"faraday_product_bytes_read", qa.faraday_product_bytes_read},
             {"scratch_bytes_read", qa.scratch_bytes_read}, {"resume_bytes_read", qa.resume_bytes_read},
             {"faraday_exchange_s", qa.faraday_exchange_s}};
}

void from_json(const json& in, RankQa& qa) {
  qa.rank = in.at("rank").get<int>();
  qa.channel_begin = in.at("channel_begin").get<int>();
  qa.channel_end = in.at("channel_end").get<int>();
  qa.read_s = number(in, "read_s");
  qa.image_s = number(in, "image_s");
  qa.restore_s = number(in, "restore_s");
  qa.channels_imaged = in.at("channels_imaged").get<int>();
  qa.faraday_mpi_bytes = number(in, "faraday_mpi_bytes");
  qa.faraday_product_bytes_read = number(in, "faraday_product_bytes_read");
  qa.scratch_bytes_read = number(in, "scratch_bytes_read");
  qa.resume_bytes_read = number(in, "resume_bytes_read");
  qa.faraday_exchange_s = number(in, "faraday_exchange_s");
}

void to_json(json& out, const RunQa& qa) {
  out = json{{"ranks", qa.ranks},         {"channels", qa.channels},         {"faraday_depths", qa.faraday_depths},
             {"image_pixels", qa.image_pixels}, {"grid_size", qa.grid_size}, {"setup_s", qa.setup_s},
             {"create_s", qa.create_s},   {"faraday_s", qa.faraday_s},       {"total_s", qa.total_s}};
}

void from_json(const json& in, RunQa& qa) {
  qa.ranks = in.at("ranks").get<int>();
  qa.channels = in.at("channels").get<int>();
  qa.faraday_depths = in.at("faraday_depths").get<int>();
  qa.image_pixels = in.at("image_pixels").get<long long>();
  qa.grid_size = in.at("grid_size").get<int>();
  qa.setup_s = number(in, "setup_s");
  qa.create_s = number(in, "create_s");
  qa.faraday_s = number(in, "faraday_s");
  qa.total_s = number(in, "total_s");
}

std::string qa_json_text(const RunQa& run, const imaging::Beam& restoring_beam, const std::vector<Direction>& pointings,
                         const std::vector<ChannelQa>& channels, const std::vector<RankQa>& ranks) {
  const json beam{{"major_arcsec", restoring_beam.major_rad * rad_to_arcsec},
                  {"minor_arcsec", restoring_beam.minor_rad * rad_to_arcsec},
                  {"pa_deg", restoring_beam.pa_rad * rad_to_deg}};
  std::string text = "{\n  \"spip_qa_version\": " + std::to_string(qa_version) + ",\n  \"run\": " + one_line(run) +
                     ",\n  \"restoring_beam\": " + one_line(beam) + ",\n  \"pointings\": " +
                     pointing_list(pointings).dump() + ",\n  \"channels\": [\n";
  for (std::size_t k = 0; k < channels.size(); ++k)
    text += "    " + one_line(channels[k]) + (k + 1 < channels.size() ? ",\n" : "\n");
  text += "  ],\n  \"ranks\": [\n";
  for (std::size_t k = 0; k < ranks.size(); ++k)
    text += "    " + one_line(ranks[k]) + (k + 1 < ranks.size() ? ",\n" : "\n");
  return text + "  ]\n}\n";
}

}  // namespace spip::pipeline
