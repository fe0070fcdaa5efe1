#include "spip/config/config.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <numbers>
#include <sstream>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <boost/program_options.hpp>

#include "spip/common/text_case.hpp"
#include "spip/error.hpp"

namespace spip {

namespace {

namespace po = boost::program_options;

// Word tables shared by parsing and printing, so the two cannot disagree.
constexpr std::array<std::pair<std::string_view, Weighting>, 3> weighting_words{{
    {"natural", Weighting::natural},
    {"uniform", Weighting::uniform},
    {"briggs", Weighting::briggs}}};
constexpr std::array<std::pair<std::string_view, Device>, 3> device_words{{
    {"auto", Device::automatic}, {"cpu", Device::cpu}, {"gpu", Device::gpu}}};
constexpr std::array<std::pair<std::string_view, PeakSearch>, 3> peak_words{{
    {"i", PeakSearch::stokes_i}, {"pol", PeakSearch::linear_pol}, {"iquv", PeakSearch::full_stokes}}};
constexpr std::array<std::pair<std::string_view, BeamModel>, 5> beam_model_words{{
    {"none", BeamModel::none},
    {"gaussian", BeamModel::gaussian},
    {"airy", BeamModel::airy},
    {"fits", BeamModel::fits},
    {"auto", BeamModel::automatic}}};
constexpr std::array<std::string_view, 4> column_words{"auto", "DATA", "CORRECTED_DATA", "MODEL_DATA"};

// ---- text -> value: false when the text is not a value of that type --------

bool parse(std::string_view text, int& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size() && !text.empty();
}

bool parse(std::string_view text, double& out) {
  // from_chars rounds correctly (lexical_cast has not always), which the
  // to_ini round trip relies on; it rejects a leading '+', which users write.
  if (text.starts_with('+')) text.remove_prefix(1);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size() && !text.empty() &&
         std::isfinite(out);
}

bool parse(std::string_view text, bool& out) {
  const std::string lower = lower_case(std::string(text));
  for (std::string_view yes : {"true", "yes", "on", "1"})
    if (lower == yes) return out = true, true;
  for (std::string_view no : {"false", "no", "off", "0"})
    if (lower == no) return out = false, true;
  return false;
}

bool parse(std::string_view text, std::string& out) {
  out = text;
  return true;
}

bool non_empty(std::string text) { return !text.empty(); }

// A prefix names files in output.dir: a '/' would put them in folders spip never made,
// and a leading '.' would hide every product (and the claim, .PREFIX.claim, with them).
bool file_name_prefix(std::string text) {
  return !text.empty() && text.find('/') == std::string::npos && !text.starts_with('.');
}

template <class Enum, std::size_t N>
bool parse_word(std::string_view text, Enum& out,
                const std::array<std::pair<std::string_view, Enum>, N>& words) {
  for (const auto& [word, value] : words)
    if (text == word) return out = value, true;
  return false;
}
bool parse(std::string_view text, Weighting& out) { return parse_word(text, out, weighting_words); }
bool parse(std::string_view text, Device& out) { return parse_word(text, out, device_words); }
bool parse(std::string_view text, PeakSearch& out) { return parse_word(text, out, peak_words); }
bool parse(std::string_view text, BeamModel& out) { return parse_word(text, out, beam_model_words); }

// ---- value -> text that parse() reads back to the same value ----------------

std::string text(int value) { return std::to_string(value); }

std::string text(double value) {
  // Shortest digits that round-trip, in %g style: 20 -> "20", 1e-4 -> "0.0001".
  std::array<char, 32> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                    std::chars_format::general);
  return {buffer.data(), result.ptr};
}

std::string text(bool value) { return value ? "true" : "false"; }
std::string text(const std::string& value) { return value; }
std::string text(Weighting value) { return to_string(value); }
std::string text(Device value) { return to_string(value); }
std::string text(PeakSearch value) { return to_string(value); }
std::string text(BeamModel value) { return to_string(value); }

constexpr std::string_view type_of(int) { return "integer"; }
constexpr std::string_view type_of(double) { return "number"; }
constexpr std::string_view type_of(bool) { return "bool"; }
constexpr std::string_view type_of(const std::string&) { return "string"; }
constexpr std::string_view type_of(Weighting) { return "word"; }
constexpr std::string_view type_of(Device) { return "word"; }
constexpr std::string_view type_of(PeakSearch) { return "word"; }
constexpr std::string_view type_of(BeamModel) { return "word"; }

// ---- the option table ------------------------------------------------------

struct Key {
  std::string_view name;         // "section.key": the INI section and key, and --section.key
  std::string_view type;
  std::string_view unit;
  std::string_view description;
  std::string_view expected;     // ends "...: expected <this>" in error messages
  bool multi;                    // several values (input.ms); one otherwise
  // Stores one value; false when it is malformed or out of range.
  std::function<bool(Config&, std::string_view)> set;
  std::function<std::vector<std::string>(const Config&)> get;
};

template <class Section, class T>
Key scalar(std::string_view name, Section Config::*section, T Section::*member,
           std::type_identity_t<bool (*)(T)> ok, std::string_view expected,
           std::string_view unit, std::string_view description) {
  return {name, type_of(T{}), unit, description, expected, false,
          [=](Config& config, std::string_view value_text) {
            T value{};
            if (!parse(value_text, value) || !ok(value)) return false;
            config.*section.*member = value;
            return true;
          },
          [=](const Config& config) {
            return std::vector<std::string>{text(config.*section.*member)};
          }};
}

Key with_type(std::string_view type, Key key) {
  key.type = type;
  return key;
}

bool is_column(std::string value) {
  return std::ranges::find(column_words, value) != column_words.end();
}
// For keys whose every parsable value is valid: parse() has rejected the rest.
template <class T> bool any(T) { return true; }

// An item of a comma-separated list without the spaces around it ("a, b").
std::string_view trimmed(std::string_view item) {
  while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
  while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
  return item;
}

// A selection from `names`: "all", "none", or comma-separated items, each choosing the
// names `chooses(item, name)` accepts, kept in the order of `names` so that to_ini()
// writes one text per selection. False for an item that chooses nothing, or, unless
// `overlap`, a name chosen twice.
bool set_selection(std::vector<std::string>& chosen_names, std::string_view value, const std::vector<std::string>& names,
                   bool (*chooses)(std::string_view item, const std::string& name), bool overlap) {
  if (value == "all") return chosen_names = names, true;
  if (value == "none") return chosen_names.clear(), true;
  std::vector<bool> chosen(names.size(), false);
  for (std::size_t begin = 0; begin <= value.size();) {
    const std::size_t end = std::min(value.find(',', begin), value.size());
    const std::string_view item = trimmed(value.substr(begin, end - begin));
    bool any = false;
    for (std::size_t k = 0; k < names.size(); ++k)
      if (chooses(item, names[k])) {
        if (chosen[k] && !overlap) return false;
        chosen[k] = any = true;
      }
    if (!any) return false;
    begin = end + 1;
  }
  chosen_names.clear();
  for (std::size_t k = 0; k < names.size(); ++k)
    if (chosen[k]) chosen_names.push_back(names[k]);
  return true;
}

std::string selection_text(const std::vector<std::string>& chosen, const std::vector<std::string>& names) {
  if (chosen.empty()) return "none";
  if (chosen == names) return "all";
  std::string joined;
  for (const std::string& name : chosen) joined += (joined.empty() ? "" : ",") + name;
  return joined;
}

// faraday.cubes: names from faraday_cube_names(), each at most once.
bool set_faraday_cubes(Config& config, std::string_view value) {
  return set_selection(config.faraday.cubes, value, faraday_cube_names(),
                       [](std::string_view item, const std::string& name) { return item == name; }, false);
}

// output.channel_cubes: names from channel_cube_names(), or a product standing for each
// of its Stokes parameters ("residual", the name less its "-I"); "restored" is "image".
bool set_channel_cubes(Config& config, std::string_view value) {
  return set_selection(
      config.output.channel_cubes, value, channel_cube_names(),
      [](std::string_view item, const std::string& name) {
        std::string word(item);
        if (word.starts_with("restored")) word.replace(0, 8, "image");
        return name == word || (name.size() == word.size() + 2 && name.starts_with(word + "-"));
      },
      true);
}

// image.beam: "MAJOR,MINOR,PA" with MAJOR >= MINOR > 0, or nothing (each channel's fit).
bool set_restoring_beam(Config& config, std::string_view value) {
  ImageConfig& image = config.image;
  if (value.empty()) return image.beam_major_arcsec = image.beam_minor_arcsec = image.beam_pa_deg = 0, true;
  std::array<double, 3> parts{};
  for (std::size_t k = 0, begin = 0; k < parts.size(); ++k) {
    const std::size_t end = k + 1 < parts.size() ? value.find(',', begin) : value.size();
    if (end == std::string_view::npos) return false;
    if (!parse(trimmed(value.substr(begin, end - begin)), parts[k])) return false;
    begin = end + 1;
  }
  if (!(parts[0] >= parts[1] && parts[1] > 0)) return false;
  std::tie(image.beam_major_arcsec, image.beam_minor_arcsec, image.beam_pa_deg) = std::tuple(parts[0], parts[1], parts[2]);
  return true;
}

// image.centre: "RA,DEC" in degrees, RA in [0, 360) and DEC in [-90, 90], or nothing.
bool set_image_centre(Config& config, std::string_view value) {
  std::vector<double>& centre = config.image.centre_deg;
  centre.clear();
  if (value.empty()) return true;
  const std::size_t comma = value.find(',');
  double ra = 0, dec = 0;
  if (comma == std::string_view::npos || !parse(trimmed(value.substr(0, comma)), ra) ||
      !parse(trimmed(value.substr(comma + 1)), dec) || !(ra >= 0 && ra < 360) || !(dec >= -90 && dec <= 90))
    return false;
  centre = {ra, dec};
  return true;
}

std::string restoring_beam_text(const ImageConfig& image) {
  if (image.beam_major_arcsec == 0) return "";
  return text(image.beam_major_arcsec) + "," + text(image.beam_minor_arcsec) + "," + text(image.beam_pa_deg);
}

// A comma-separated list of distinct values, each one `valid` accepts, into `list`.
template <typename T, typename Valid>
bool set_distinct_list(std::string_view value, std::vector<T>& list, Valid valid) {
  for (std::size_t begin = 0; begin <= value.size();) {
    const std::size_t end = std::min(value.find(',', begin), value.size());
    T item{};
    if (!parse(trimmed(value.substr(begin, end - begin)), item) || !valid(item)) return false;
    if (std::find(list.begin(), list.end(), item) != list.end()) return false;
    list.push_back(item);
    begin = end + 1;
  }
  return true;
}

// input.spw: -1 (each MS's only window), all, or "0,2,3".
bool set_windows(Config& config, std::string_view value) {
  InputConfig& input = config.input;
  input.spw.clear();
  input.all_windows = trimmed(value) == "all";
  if (input.all_windows || trimmed(value) == "-1") return true;
  return set_distinct_list(value, input.spw, [](int id) { return id >= 0; });
}

// input.field: -1 (each MS's only field) or "0,3" (each field an input of its own).
bool set_fields(Config& config, std::string_view value) {
  config.input.fields.clear();
  return trimmed(value) == "-1" || set_distinct_list(value, config.input.fields, [](int id) { return id >= 0; });
}

std::string fields_text(const InputConfig& input) {
  std::string list;
  for (int id : input.fields) list += (list.empty() ? "" : ",") + std::to_string(id);
  return list.empty() ? "-1" : list;
}

// clean.scales: empty (automatic) or "0,8,16" (pixels, each >= 0, no repeats).
bool set_scales(Config& config, std::string_view value) {
  config.clean.scales.clear();
  return trimmed(value).empty() || set_distinct_list(value, config.clean.scales, [](double s) { return s >= 0; });
}

std::string scales_text(const CleanConfig& clean) {
  std::string list;
  for (double scale : clean.scales) list += (list.empty() ? "" : ",") + text(scale);
  return list;
}

std::string windows_text(const InputConfig& input) {
  if (input.all_windows) return "all";
  if (input.spw.empty()) return "-1";
  std::string list;
  for (int id : input.spw) list += (list.empty() ? "" : ",") + std::to_string(id);
  return list;
}

const std::vector<Key>& keys() {
  static const std::vector<Key> table = {
      {"input.ms", "paths", "", "Measurement Set(s) to image; repeat the key for several",
       "a Measurement Set path", true,
       [](Config& c, std::string_view path) {
         c.input.ms.emplace_back(path);
         return !path.empty();
       },
       [](const Config& c) { return c.input.ms; }},
      with_type("word", scalar("input.column", &Config::input, &InputConfig::column, is_column,
                               "one of auto, DATA, CORRECTED_DATA, MODEL_DATA", "",
                               "visibility column: DATA, CORRECTED_DATA or MODEL_DATA; auto: CORRECTED_DATA in an MS "
                               "that has it, else DATA, as WSClean")),
      scalar("input.cube_q", &Config::input, &InputConfig::cube_q, any<std::string>, "a FITS cube, or nothing", "",
             "instead of input.ms: a Stokes Q cube another imager made (RA---SIN, DEC--SIN and FREQ axes in any "
             "order, an optional degenerate STOKES axis), on which the Faraday stage runs alone; with input.cube_u"),
      scalar("input.cube_u", &Config::input, &InputConfig::cube_u, any<std::string>, "a FITS cube, or nothing", "",
             "the Stokes U cube beside input.cube_q, on the same grid and frequency axis"),
      scalar("input.cube_i", &Config::input, &InputConfig::cube_i, any<std::string>, "a FITS cube, or nothing", "",
             "optional Stokes I cube beside input.cube_q: its moments, the Stokes I model and fractional polarisation"),
      scalar("input.cube_v", &Config::input, &InputConfig::cube_v, any<std::string>, "a FITS cube, or nothing", "",
             "optional Stokes V cube beside input.cube_q: its moments"),
      scalar("input.cube_noise", &Config::input, &InputConfig::cube_noise, any<std::string>, "a text file, or nothing",
             "", "with input.cube_q: one noise sigma per channel (Jy/beam, one per line, as RM-Tools' -n file); "
             "nothing: the MAD sigma of each channel's Q and U planes"),
      {"input.field", "list", "",
       "fields to image, as FIELD ids (0 or 0,3,5), each an input of its own: fields with different phase centres are "
       "pointings, which beam.model makes one mosaic of; -1: each MS must have one field",
       "-1, or field ids >= 0 separated by commas", false, set_fields,
       [](const Config& c) { return std::vector<std::string>{fields_text(c.input)}; }},
      {"input.spw", "list", "",
       "spectral windows to image, as SPECTRAL_WINDOW ids (0,2,3), or all; their channels join one frequency "
       "axis; -1: each MS must have one window",
       "-1, all, or spectral window ids >= 0 separated by commas", false, set_windows,
       [](const Config& c) { return std::vector<std::string>{windows_text(c.input)}; }},
      scalar("input.channel_begin", &Config::input, &InputConfig::channel_begin,
             [](int v) { return v >= 0; }, "an integer >= 0", "",
             "first channel to image, of the one window of one input; with several, input.freq_min"),
      // Checked against channel_begin once both are known.
      scalar("input.channel_end", &Config::input, &InputConfig::channel_end,
             any<int>,
             "-1 or an integer > input.channel_begin", "",
             "one past the last channel; -1: to the end of the band"),
      scalar("input.freq_min", &Config::input, &InputConfig::freq_min_hz,
             [](double v) { return v >= 0; }, "a number >= 0", "Hz",
             "image the channels centred at or above this frequency, of every input"),
      scalar("input.freq_max", &Config::input, &InputConfig::freq_max_hz,
             [](double v) { return v >= 0; }, "a number >= 0", "Hz",
             "image the channels centred at or below this frequency, of every input; 0: no limit"),
      scalar("input.row_chunk", &Config::input, &InputConfig::row_chunk,
             [](int v) { return v >= 1; }, "an integer >= 1", "rows",
             "rows read per casacore call (bounds reader memory)"),
      scalar("input.block_channels", &Config::input, &InputConfig::block_channels,
             [](int v) { return v >= 0; }, "an integer >= 0", "channels",
             "channels read per block (the next block is read while one is imaged); 0: from parallel.memory_gb, at most 1 GiB"),

      scalar("image.channels_out", &Config::image, &ImageConfig::channels_out, [](int v) { return v >= 0; },
             "an integer >= 0", "channels",
             "bin the channels of every input into this many image channels of equal width, each visibility "
             "gridded at its own frequency (WSClean's -channels-out); 0: one image channel per channel"),
      scalar("image.channel_width", &Config::image, &ImageConfig::channel_width_hz, [](double v) { return v >= 0; },
             "a number >= 0", "Hz", "bin the channels into image channels this wide instead; 0: see image.channels_out"),
      scalar("image.size", &Config::image, &ImageConfig::size,
             [](int v) { return v >= 16 && v % 2 == 0; }, "an even integer >= 16", "pixels",
             "image width and height (even, at least 16)"),
      scalar("image.scale", &Config::image, &ImageConfig::scale_arcsec,
             [](double v) { return v > 0; }, "a number > 0", "arcsec", "pixel size"),
      scalar("image.weighting", &Config::image, &ImageConfig::weighting, any<Weighting>,
             "one of natural, uniform, briggs", "", "natural, uniform or briggs"),
      scalar("image.robust", &Config::image, &ImageConfig::robust,
             [](double v) { return v >= -2 && v <= 2; }, "a number in [-2, 2]", "",
             "Briggs robustness, -2 (uniform) to 2 (natural)"),
      scalar("image.accuracy", &Config::image, &ImageConfig::accuracy,
             [](double v) { return v >= 1e-6 && v <= 0.1; }, "a number in [1e-6, 0.1]", "",
             "requested gridding accuracy, 1e-6 (the limit of single-precision grids, as ducc0's) to 0.1"),
      scalar("image.padding", &Config::image, &ImageConfig::padding,
             [](double v) { return v >= 1 && v <= 4; }, "a number in [1, 4]", "",
             "grid padding factor, 1 to 4"),
      scalar("image.wstacking", &Config::image, &ImageConfig::wstacking,
             any<bool>, "true or false", "",
             "w-stacking; false: 2-D imaging (wrong for wide fields)"),
      scalar("image.common_beam", &Config::image, &ImageConfig::common_beam, any<bool>, "true or false", "",
             "restore every channel with one beam that holds every fitted one (needed for RM synthesis); false: its own "
             "(BEAMS table); with input.cube_q: convolve every channel to the products' beam (image.beam, or one that "
             "holds every channel's), as CASA's imsmooth; false: take the channels as they are"),
      {"image.beam", "numbers", "arcsec",
       "restoring beam MAJOR,MINOR,PA for every channel (FWHM in arcsec, PA in deg east of north), as WSClean's "
       "-beam-shape; empty: fitted to each channel's PSF; with input.cube_q: the beam every channel is convolved to "
       "(image.common_beam), or the cubes' beam where their headers give none",
       "MAJOR,MINOR,PA in arcsec, arcsec, deg with MAJOR >= MINOR > 0, or nothing", false, set_restoring_beam,
       [](const Config& c) { return std::vector<std::string>{restoring_beam_text(c.image)}; }},
      {"image.centre", "numbers", "deg",
       "the image's centre (tangent point) RA,DEC, J2000, as chgcentre moves it; the visibilities are turned to it "
       "and each primary beam stays on its input's phase centre; empty: the inputs' phase centre, or the middle of a "
       "mosaic's pointings",
       "RA,DEC in deg with 0 <= RA < 360 and -90 <= DEC <= 90, or nothing", false, set_image_centre,
       [](const Config& c) {
         return std::vector<std::string>{c.image.centre_deg.empty()
                                             ? std::string()
                                             : text(c.image.centre_deg[0]) + "," + text(c.image.centre_deg[1])};
       }},
      scalar("image.uv_min", &Config::image, &ImageConfig::uv_min,
             [](double v) { return v >= 0; }, "a number >= 0", "lambda",
             "drop baselines shorter than this"),
      scalar("image.uv_max", &Config::image, &ImageConfig::uv_max,
             [](double v) { return v >= 0; }, "a number >= 0", "lambda",
             "drop baselines longer than this; 0: no limit"),
      scalar("image.taper", &Config::image, &ImageConfig::taper_arcsec,
             [](double v) { return v >= 0; }, "a number >= 0", "arcsec",
             "Gaussian uv taper, FWHM in the image; 0: none"),

      scalar("clean.niter", &Config::clean, &CleanConfig::niter, [](int v) { return v >= 0; },
             "an integer >= 0", "", "minor-cycle iteration limit; 0: dirty images only"),
      scalar("clean.gain", &Config::clean, &CleanConfig::gain,
             [](double v) { return v > 0 && v <= 1; }, "a number in (0, 1]", "",
             "minor-cycle loop gain, (0, 1]"),
      scalar("clean.mgain", &Config::clean, &CleanConfig::mgain,
             [](double v) { return v > 0 && v <= 1; }, "a number in (0, 1]", "",
             "major-cycle gain, (0, 1]"),
      scalar("clean.threshold", &Config::clean, &CleanConfig::threshold_jy,
             [](double v) { return v >= 0; }, "a number >= 0", "Jy",
             "absolute stopping threshold"),
      scalar("clean.auto_threshold", &Config::clean, &CleanConfig::auto_threshold,
             [](double v) { return v >= 0; }, "a number >= 0", "sigma",
             "stop at this many sigma (MAD) of the peak-search quantity (clean.peak), re-estimated each major cycle; "
             "with iquv, the default, that sigma is the four Stokes images' joined, about twice Stokes I's; 0: off"),
      scalar("clean.auto_mask", &Config::clean, &CleanConfig::auto_mask,
             [](double v) { return v >= 0; }, "a number >= 0", "sigma",
             "clean everywhere down to this many sigma, then only where components were found down to "
             "auto_threshold; 0: off"),
      scalar("clean.peak", &Config::clean, &CleanConfig::peak, any<PeakSearch>,
             "one of i, pol, iquv", "",
             "joined-polarisation peak search on i: |I|, pol: |Q+iU|, or iquv: sqrt(I^2+Q^2+U^2+V^2)"),
      scalar("clean.max_major", &Config::clean, &CleanConfig::max_major,
             [](int v) { return v >= 1; }, "an integer >= 1", "", "major-cycle limit"),
      scalar("clean.divergence_limit", &Config::clean, &CleanConfig::divergence_limit,
             [](double v) { return v > 1; }, "a number > 1", "",
             "stop CLEAN on a channel when its peak rises past this many times the lowest peak a major cycle "
             "started from, keeping the model from before that cycle"),
      scalar("clean.subminor", &Config::clean, &CleanConfig::subminor, any<bool>, "true or false", "",
             "search and subtract among the pixels above the cycle's stop only"),
      scalar("clean.multiscale", &Config::clean, &CleanConfig::multiscale, any<bool>, "true or false", "",
             "multiscale CLEAN: components are tapered quadratic kernels of clean.scales, with the same joined "
             "peak search"),
      {"clean.scales", "list", "pixels",
       "multiscale kernel sizes, e.g. 0,8,16,32; empty: 0, then four times WSClean's beam (1 / longest baseline, "
       "or the taper), doubling below half the image",
       "nothing, or sizes >= 0 in pixels separated by commas", false, set_scales,
       [](const Config& c) { return std::vector<std::string>{scales_text(c.clean)}; }},
      scalar("clean.scale_bias", &Config::clean, &CleanConfig::scale_bias,
             [](double v) { return v > 0 && v <= 1; }, "a number in (0, 1]", "",
             "multiscale bias (WSClean's -multiscale-scale-bias): a peak counts bias^-log2(scale / twice the "
             "beam) times; lower values favour larger scales"),

      scalar("faraday.phi_max", &Config::faraday, &FaradayConfig::phi_max,
             [](double v) { return v >= 0; }, "a number >= 0", "rad/m^2",
             "largest |Faraday depth|; 0: RM-Tools default"),
      scalar("faraday.dphi", &Config::faraday, &FaradayConfig::dphi,
             [](double v) { return v >= 0; }, "a number >= 0", "rad/m^2",
             "Faraday depth step; 0: RMSF FWHM / samples_per_fwhm"),
      scalar("faraday.samples_per_fwhm", &Config::faraday, &FaradayConfig::samples_per_fwhm,
             [](double v) { return v >= 1; }, "a number >= 1", "",
             "Faraday depth samples per RMSF FWHM when dphi is 0"),
      scalar("faraday.variance_weights", &Config::faraday, &FaradayConfig::variance_weights, any<bool>,
             "true or false", "", "weight channels by 1/sigma^2 of their Q, U residual; false: uniform"),
      scalar("faraday.rmclean_niter", &Config::faraday, &FaradayConfig::rmclean_niter,
             [](int v) { return v >= 0; }, "an integer >= 0", "", "RM-CLEAN iterations per pixel; 0: none"),
      scalar("faraday.rmclean_gain", &Config::faraday, &FaradayConfig::rmclean_gain,
             [](double v) { return v > 0 && v <= 1; }, "a number in (0, 1]", "", "RM-CLEAN loop gain"),
      scalar("faraday.rmclean_cutoff", &Config::faraday, &FaradayConfig::rmclean_cutoff,
             [](double v) { return v >= 0; }, "a number >= 0", "sigma",
             "stop RM-CLEAN at this many sigma of the FDF noise"),
      scalar("faraday.rmclean_xcorr", &Config::faraday, &FaradayConfig::rmclean_xcorr, any<bool>, "true or false", "",
             "RM-CLEAN components at the peak of the FDF's cross-correlation with the RMSF (MAPS)"),
      scalar("faraday.ionosphere", &Config::faraday, &FaradayConfig::ionosphere, any<std::string>,
             "a file name, or nothing", "",
             "table of time (MJD s, as the MS TIME column) and ionospheric RM (rad/m^2), e.g. from RMextract; "
             "each row's Q and U are rotated back by RM(t) lambda^2 before gridding; empty: none"),
      scalar("faraday.fractional", &Config::faraday, &FaradayConfig::fractional, any<bool>, "true or false", "",
             "divide Q and U by a power law fitted to each pixel's Stokes I spectrum before RM synthesis "
             "(RM-Tools -i); PI is then at the reference frequency and peak-fracpol is written"),
      scalar("faraday.fractional_threshold", &Config::faraday, &FaradayConfig::fractional_threshold,
             [](double v) { return v > 0; }, "a number > 0", "sigma",
             "with faraday.fractional: fit pixels whose mean I is above this many sigma of the FDF noise; "
             "blank the others"),

      {"faraday.cubes", "words", "", "Faraday depth cubes to write, comma-separated: real-dirty, imag-dirty, "
       "amp-dirty, real-clean, imag-clean, amp-clean; all; or none",
       "all, none, or a comma-separated list of real-dirty, imag-dirty, amp-dirty, real-clean, imag-clean, amp-clean",
       false, set_faraday_cubes,
       [](const Config& c) { return std::vector<std::string>{selection_text(c.faraday.cubes, faraday_cube_names())}; }},

      scalar("catalogue.threshold", &Config::catalogue, &CatalogueConfig::threshold,
             [](double v) { return v >= 0; }, "a number >= 0", "sigma",
             "polarised sources: islands of peak PI above this many local FDF sigma; 0: no catalogue"),
      scalar("catalogue.box", &Config::catalogue, &CatalogueConfig::box, [](int v) { return v >= 0; },
             "an integer >= 0", "pixels", "side of the boxes the local FDF noise is the rms of; 0: 20 restoring beams"),
      scalar("catalogue.complexity", &Config::catalogue, &CatalogueConfig::complexity,
             [](double v) { return v > 0; }, "a number > 0", "RMSF FWHM",
             "flag a source Faraday-complex when the spread m2 of its RM-CLEAN components exceeds this"),
      scalar("catalogue.sources", &Config::catalogue, &CatalogueConfig::sources, any<std::string>,
             "a FITS or CSV table, or nothing", "",
             "a Stokes I component list (Selavy, PyBDSF, Aegean: RA and Dec columns in degrees): the catalogue "
             "measures the Faraday quantities at those positions, in its order, instead of finding islands of PI"),

      scalar("beam.model", &Config::beam, &BeamConfig::model, any<BeamModel>, "one of none, gaussian, airy, fits, auto", "",
             "primary beam the restored images are divided by (PREFIX-image-pb-*.fits, with the response in "
             "PREFIX-pb.fits): gaussian: a Gaussian of FWHM fwhm_factor lambda / D; airy: the Airy pattern of a "
             "uniformly lit dish; fits: the cube beam.fits; auto: the model of the telescope the inputs name (VLA, "
             "ATCA, MeerKAT, ASKAP); inputs of several pointings make a linear mosaic weighted by it; none: apparent "
             "images only"),
      scalar("beam.dish_diameter", &Config::beam, &BeamConfig::dish_diameter_m, [](double v) { return v >= 0; },
             "a number >= 0", "m",
             "dish diameter D of the beam; 0: the inputs' ANTENNA DISH_DIAMETER (one value, the same in every input)"),
      scalar("beam.fwhm_factor", &Config::beam, &BeamConfig::fwhm_factor, [](double v) { return v > 0; },
             "a number > 0", "", "gaussian beam: FWHM = fwhm_factor lambda / D"),
      scalar("beam.blockage", &Config::beam, &BeamConfig::blockage_m, [](double v) { return v >= 0; },
             "a number >= 0", "m", "airy beam: diameter of the central blockage; 0: none"),
      scalar("beam.limit", &Config::beam, &BeamConfig::limit, [](double v) { return v > 0 && v < 1; },
             "a number in (0, 1)", "",
             "the corrected images are blank where the beam's response is below this (noise there is amplified "
             "more than 1 / limit times and the beam model is least certain)"),
      scalar("beam.fits", &Config::beam, &BeamConfig::fits, any<std::string>, "a file name, or nothing", "",
             "fits beam: a cube with RA---SIN and DEC--SIN axes centred on the pointing, a FREQ axis and optionally "
             "a STOKES axis of I (the response) or I, Q, U, V (the response, then the leakages I -> Q, U, V as "
             "fractions of I), interpolated bilinearly in position and linearly in frequency"),

      scalar("output.dir", &Config::output, &OutputConfig::dir, non_empty,
             "a non-empty path", "", "directory for the output images"),
      scalar("output.prefix", &Config::output, &OutputConfig::prefix,
             file_name_prefix, "a non-empty file name prefix without '/', not starting with '.'", "",
             "file name prefix of the output images"),
      {"output.channel_cubes", "words", "", "per-channel cubes to write, comma-separated: dirty, model, residual, "
       "image (or restored), image-pb (restored and primary-beam corrected, with beam.model), each for all Stokes "
       "or one (image-Q), psf and pb (the beam's response); all; or none. The Faraday products need none of them",
       "all, none, or a comma-separated list of dirty, model, residual, image, restored, image-pb (each alone or "
       "with -I, -Q, -U, -V), psf and pb",
       false, set_channel_cubes,
       [](const Config& c) { return std::vector<std::string>{selection_text(c.output.channel_cubes, channel_cube_names())}; }},
      scalar("output.checkpoint_interval", &Config::output, &OutputConfig::checkpoint_interval,
             [](double v) { return v >= 0; }, "a number >= 0", "s",
             "how often a rank syncs its cubes to disk and marks the channels in them as done; a killed run "
             "images again at most this much of each rank's work; 0: after every channel"),

      scalar("parallel.device", &Config::parallel, &ParallelConfig::device, any<Device>,
             "one of auto, cpu, gpu", "", "auto (GPU when present), cpu or gpu"),
      scalar("parallel.threads", &Config::parallel, &ParallelConfig::threads,
             [](int v) { return v >= 0; }, "an integer >= 0", "",
             "OpenMP threads per rank; 0: all available cores"),
      scalar("parallel.memory_gb", &Config::parallel, &ParallelConfig::memory_gb,
             [](double v) { return v >= 0; }, "a number >= 0", "GB",
             "memory a rank may hold (the process itself, 0.06 GB; freed memory kept for reuse, at most 0.27 GB; channel blocks, grids, CLEAN's buffers, Faraday chunks); 0: the node's memory over its ranks"),
      scalar("parallel.scratch", &Config::parallel, &ParallelConfig::scratch, [](std::string) { return true; },
             "a path", "",
             "node-local folder for the image planes a rank keeps when they exceed parallel.memory_gb, made if only it is "
             "missing; empty: $TMPDIR or /tmp"),
      scalar("parallel.channels_per_rank", &Config::parallel, &ParallelConfig::channels_per_rank,
             [](int v) { return v >= 0; }, "an integer >= 0", "channels",
             "fixed channel block per rank; 0: balance unflagged visibilities over ranks"),
      scalar("parallel.ranks_per_channel", &Config::parallel, &ParallelConfig::ranks_per_channel,
             [](int v) { return v >= 0; }, "an integer >= 0", "ranks",
             "ranks that share each channel's rows (a group: each grids its share, the group sums the images "
             "every major cycle); must divide the ranks; 0: chosen, more than 1 only where the ranks are twice "
             "the channels or more, or a channel does not fit a rank's memory"),
      scalar("parallel.time_limit", &Config::parallel, &ParallelConfig::time_limit,
             [](double v) { return v >= 0; }, "a number >= 0", "s",
             "time the run may take (the Slurm scripts pass the job's time left); a run that cannot finish one "
             "channel in it stops before reading; 0: no limit"),
  };
  return table;
}

std::string_view section_of(const Key& key) { return key.name.substr(0, key.name.find('.')); }
std::string_view member_of(const Key& key) { return key.name.substr(key.name.find('.') + 1); }

po::options_description key_options() {
  po::options_description options;
  for (const Key& key : keys()) {
    const std::string name(key.name);
    if (key.multi)
      options.add_options()(name.c_str(), po::value<std::vector<std::string>>()->multitoken());
    else
      options.add_options()(name.c_str(), po::value<std::string>());
  }
  return options;
}

po::options_description generic_options() {
  po::options_description options;
  options.add_options()
      ("config", po::value<std::string>())
      ("help", "")
      ("print-config", "")
      ("plan", "")
      ("plan-ranks", po::value<int>())
      ("plan-node-ranks", po::value<int>())
      ("plan-rates", po::value<std::string>())
      ("break-claim", "")
      ("version", "");
  return options;
}

// Where a value came from, as error messages name it.
struct Source {
  const po::variables_map* values;
  std::string where;  // "in run.cfg" or "on the command line"
};

[[noreturn]] void reject(const po::error& error, const std::string& where) {
  if (const auto* unknown = dynamic_cast<const po::unknown_option*>(&error)) {
    std::string name = unknown->get_option_name();
    name.erase(0, name.find_first_not_of('-'));
    SPIP_THROW(ConfigError, "unknown key " + name + " " + where +
                                ": expected one of the keys listed by spip --help");
  }
  SPIP_THROW(ConfigError, std::string(error.what()) + " " + where);
}

[[noreturn]] void reject(const Key& key, std::string_view value, const std::string& where) {
  SPIP_THROW(ConfigError, std::string(key.name) + " = " + std::string(value) + " " + where +
                              ": expected " + std::string(key.expected));
}

po::variables_map read_file(const std::string& path, const po::options_description& options) {
  const std::string where = "in " + path;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    SPIP_THROW(ConfigError, "config file " + path + " does not exist or is not a file");
  std::ifstream stream(path);
  if (!stream) SPIP_THROW(ConfigError, "cannot open config file " + path);
  po::variables_map values;
  try {
    po::store(po::parse_config_file(stream, options, /*allow_unregistered=*/false), values);
  } catch (const po::error& error) {
    reject(error, where);
  }
  return values;
}

}  // namespace

double Config::pixel_scale_rad() const {
  return image.scale_arcsec * std::numbers::pi / (180.0 * 3600.0);
}

std::string to_string(Weighting weighting) {
  for (const auto& [word, value] : weighting_words)
    if (value == weighting) return std::string(word);
  SPIP_THROW(Error, "internal error: unknown Weighting");
}

std::string to_string(PeakSearch peak) {
  for (const auto& [word, value] : peak_words)
    if (value == peak) return std::string(word);
  SPIP_THROW(Error, "internal error: unknown PeakSearch");
}

std::string to_string(BeamModel model) {
  for (const auto& [word, value] : beam_model_words)
    if (value == model) return std::string(word);
  SPIP_THROW(Error, "internal error: unknown BeamModel");
}

std::string to_string(Device device) {
  for (const auto& [word, value] : device_words)
    if (value == device) return std::string(word);
  SPIP_THROW(Error, "internal error: unknown Device");
}

ParsedCommand parse_command_line(int argc, const char* const argv[]) {
  po::options_description command_line_options = generic_options();
  command_line_options.add(key_options());

  po::variables_map command_line;
  try {
    // Without guessing, --image.s is an error rather than whichever key it
    // happens to abbreviate.
    const auto style = po::command_line_style::default_style &
                       ~po::command_line_style::allow_guessing;
    const po::parsed_options options =
        po::command_line_parser(argc, argv).options(command_line_options).style(style).run();
    // Boost drops bare words silently; one is most likely a value missing its key.
    for (const std::string& word :
         po::collect_unrecognized(options.options, po::include_positional))
      SPIP_THROW(ConfigError, "unexpected argument " + word +
                                  " on the command line: expected --section.key VALUE");
    po::store(options, command_line);
  } catch (const po::error& error) {
    reject(error, "on the command line");
  }

  ParsedCommand parsed;
  if (command_line.count("help")) {
    parsed.action = CommandAction::help;
    return parsed;
  }
  if (command_line.count("version")) {
    parsed.action = CommandAction::version;
    return parsed;
  }
  if (command_line.count("print-config")) parsed.action = CommandAction::print_config;
  if (command_line.count("plan")) parsed.action = CommandAction::plan;
  if ((command_line.count("plan-ranks") || command_line.count("plan-node-ranks") || command_line.count("plan-rates")) &&
      !command_line.count("plan"))
    SPIP_THROW(ConfigError, "--plan-ranks, --plan-node-ranks and --plan-rates go with --plan");
  for (const auto& [option, value] : {std::pair{"plan-ranks", &parsed.plan_ranks}, {"plan-node-ranks", &parsed.plan_node_ranks}})
    if (command_line.count(option)) {
      *value = command_line[option].as<int>();
      if (*value < 1)
        SPIP_THROW(ConfigError, "--" + std::string(option) + " " + std::to_string(*value) + ": expected an integer >= 1");
    }
  if (command_line.count("plan-rates")) parsed.plan_rates = command_line["plan-rates"].as<std::string>();
  parsed.break_claim = command_line.count("break-claim") > 0;

  Config& config = parsed.config;
  po::variables_map file;
  if (command_line.count("config")) {
    config.config_file = command_line["config"].as<std::string>();
    file = read_file(config.config_file, key_options());
  }

  // The command line wins: a key given there replaces the file's value(s) whole.
  const std::array<Source, 2> sources{{{&command_line, "on the command line"},
                                       {&file, "in " + config.config_file}}};
  std::string channel_end_where;
  for (const Key& key : keys()) {
    const std::string name(key.name);
    const auto source = std::ranges::find_if(
        sources, [&](const Source& s) { return s.values->count(name) != 0; });
    if (source == sources.end()) continue;
    const po::variable_value& value = (*source->values)[name];
    const std::vector<std::string> tokens =
        key.multi ? value.as<std::vector<std::string>>()
                  : std::vector<std::string>{value.as<std::string>()};
    if (key.multi) config.input.ms.clear();
    for (const std::string& token : tokens)
      if (!key.set(config, token)) reject(key, token, source->where);
    if (key.name == "input.channel_end") channel_end_where = source->where;
  }

  // Every run writes its configuration beside its products (to_ini), where Boost would
  // read '#' as a comment and trim edge spaces: such a value would not come back. A
  // shell's conventions do not hold in a configuration file (or a quoted argument): '~'
  // would make a folder named '~' (and CFITSIO would expand it to $HOME, elsewhere), and
  // quotes would be part of the name.
  for (const Key& key : keys())
    for (const std::string& value : key.get(config)) {
      if (value.find('#') != std::string::npos || (!value.empty() && (std::isspace(static_cast<unsigned char>(value.front())) ||
                                                                       std::isspace(static_cast<unsigned char>(value.back())))))
        SPIP_THROW(ConfigError, std::string(key.name) + " = '" + value + "': a value with '#' or leading or trailing spaces cannot be "
                                "written back to the run's configuration file; rename it");
      if (value.starts_with('~'))
        SPIP_THROW(ConfigError, std::string(key.name) + " = " + value + ": '~' is expanded only by a shell, not in a "
                                "configuration file or a quoted argument; give the path in full");
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
        SPIP_THROW(ConfigError, std::string(key.name) + " = " + value + ": the quotes would be part of the value; "
                                "write it without them");
    }
  if (!config.input.cubes() && config.image.beam_major_arcsec > 0 && !config.image.common_beam)
    SPIP_THROW(ConfigError, "image.beam restores every channel with one beam, and image.common_beam = false asks for "
                            "each channel's own: expected one of them");
  const InputConfig& input = config.input;
  if (input.channel_end != -1 && input.channel_end <= input.channel_begin)
    SPIP_THROW(ConfigError, "input.channel_end = " + std::to_string(input.channel_end) + " " +
                                channel_end_where + ": expected -1 or an integer > " +
                                "input.channel_begin (" + std::to_string(input.channel_begin) +
                                ")");
  if (config.image.channels_out > 0 && config.image.channel_width_hz > 0)
    SPIP_THROW(ConfigError, "image.channels_out = " + std::to_string(config.image.channels_out) +
                                " and image.channel_width = " + text(config.image.channel_width_hz) +
                                " Hz both bin the channels: expected one of them, the other 0");
  if (config.image.uv_max > 0 && config.image.uv_max <= config.image.uv_min)
    SPIP_THROW(ConfigError, "image.uv_max = " + text(config.image.uv_max) + " lambda is not above image.uv_min = " +
                                text(config.image.uv_min) + " lambda: no baseline would be kept; expected 0 (no limit) "
                                "or a number > uv_min");
  if (input.freq_max_hz > 0 && input.freq_max_hz < input.freq_min_hz)
    SPIP_THROW(ConfigError, "input.freq_max = " + text(input.freq_max_hz) + " Hz is below input.freq_min = " +
                                text(input.freq_min_hz) + " Hz: expected 0 (no limit) or a number >= freq_min");
  // The SIN projection's direction cosines lie within [-1, 1]: a pixel past l = 1 on the
  // image's axes is on no sky, and gridding would fold the visibilities' fringes onto it.
  const double half_width = 0.5 * config.image.size * config.pixel_scale_rad();
  if (half_width > 1)
    SPIP_THROW(ConfigError, "image.size = " + std::to_string(config.image.size) + " and image.scale = " +
                                text(config.image.scale_arcsec) + " arcsec put the image's edges at l = " +
                                text(half_width) + " in the SIN projection, beyond the horizon at l = 1: expected "
                                "image.size x image.scale at most 2 rad (412530 arcsec)");
  const CleanConfig& clean = config.clean;
  if (clean.auto_mask > 0 && !(clean.auto_threshold > 0 && clean.auto_threshold < clean.auto_mask))
    SPIP_THROW(ConfigError, "clean.auto_mask = " + text(clean.auto_mask) +
                                " needs clean.auto_threshold between 0 and it, exclusive (the mask is found at "
                                "auto_mask sigma, then CLEAN goes deeper inside it to auto_threshold sigma); "
                                "clean.auto_threshold is " + text(clean.auto_threshold));
  for (double scale : clean.scales)
    if (2 * std::ceil(scale / 2) + 1 > config.image.size / 2)
      SPIP_THROW(ConfigError, "clean.scales = " + scales_text(clean) + ": scale " + text(scale) +
                                  " pixels is too large for image.size " + std::to_string(config.image.size) +
                                  ": expected kernels of at most half the image (scales <= " +
                                  std::to_string(config.image.size / 2 - 2) + ")");
  // A beam product named without a beam, or a cube without its model, would be dropped silently.
  const BeamConfig& beam = config.beam;
  if (beam.model == BeamModel::none && config.output.channel_cubes != channel_cube_names())
    for (const std::string& name : config.output.channel_cubes)
      if (name == "pb" || name.starts_with("image-pb"))
        SPIP_THROW(ConfigError, "output.channel_cubes names " + name +
                                    ", which needs a primary beam: expected beam.model gaussian, airy, fits or auto");
  if (!beam.fits.empty() && beam.model != BeamModel::fits)
    SPIP_THROW(ConfigError, "beam.fits = " + beam.fits + " is set but beam.model is " + to_string(beam.model) +
                                ": expected beam.model fits, or no beam.fits");
  const BeamConfig analytic_defaults;
  if ((beam.model == BeamModel::fits || beam.model == BeamModel::automatic) &&
      (beam.dish_diameter_m != analytic_defaults.dish_diameter_m || beam.fwhm_factor != analytic_defaults.fwhm_factor ||
       beam.blockage_m != analytic_defaults.blockage_m))
    SPIP_THROW(ConfigError, "beam.model = " + to_string(beam.model) +
                                " takes its beam whole: beam.dish_diameter, beam.fwhm_factor and beam.blockage "
                                "shape gaussian and airy beams only");
  if (input.cubes() && !input.ms.empty())
    SPIP_THROW(ConfigError, "input.cube_q and input.ms are both set: expected Measurement Sets to image, or the cubes "
                            "of another imager for the Faraday stage, not both");
  if (input.cubes() && (input.cube_q.empty() || input.cube_u.empty()))
    SPIP_THROW(ConfigError, std::string(input.cube_q.empty() ? "input.cube_u" : "input.cube_q") +
                                " is set without " + (input.cube_q.empty() ? "input.cube_q" : "input.cube_u") +
                                ": expected both Stokes Q and U cubes");
  if (!input.cubes() && !(input.cube_i.empty() && input.cube_v.empty() && input.cube_noise.empty()))
    SPIP_THROW(ConfigError, std::string(!input.cube_i.empty() ? "input.cube_i" : !input.cube_v.empty() ? "input.cube_v"
                                                                                                     : "input.cube_noise") +
                                " is set without input.cube_q and input.cube_u: expected the Q and U cubes too");
  if (input.cubes() && !config.faraday.ionosphere.empty())
    SPIP_THROW(ConfigError, "faraday.ionosphere = " + config.faraday.ionosphere +
                                " with input.cube_q: the ionosphere is undone visibility by visibility, and the cubes "
                                "are images; expected no faraday.ionosphere");
  if (input.cubes() && beam.model != BeamModel::none)
    SPIP_THROW(ConfigError, "beam.model = " + to_string(beam.model) +
                                " with input.cube_q: the cubes are taken as they are (a mosaic made by linmos is "
                                "already corrected); expected beam.model none");
  if ((parsed.action == CommandAction::run || parsed.action == CommandAction::plan) && input.ms.empty() &&
      !input.cubes())
    SPIP_THROW(ConfigError,
               "input.ms is not set: expected one or more Measurement Set paths, as "
               "input.ms in the [input] section of the config file or --input.ms on the "
               "command line (or input.cube_q and input.cube_u, another imager's cubes)");
  // On another imager's cubes nothing is read from a Measurement Set, imaged or cleaned,
  // and without a beam model nothing is corrected for one: what the keys for that would
  // change, the run says it does not.
  // Only keys set to other than their defaults: a run's own configuration file, which
  // lists every key, says nothing by being read back.
  const Config defaults;
  const auto unused = [&](const std::string& why, auto&& predicate) {
    ParsedCommand::Unused list{why, {}};
    for (const Key& key : keys())
      if (predicate(std::string(key.name)) && key.get(config) != key.get(defaults)) list.keys.emplace_back(key.name);
    if (!list.keys.empty()) parsed.unused.push_back(list);
  };
  if (input.cubes())
    unused("on another imager's cubes nothing is imaged or cleaned", [](const std::string& name) {
      return name.starts_with("clean.") || name.starts_with("beam.") ||
             (name.starts_with("input.") && !name.starts_with("input.cube_")) ||
             (name.starts_with("image.") && name != "image.beam" && name != "image.common_beam");
    });
  else if (beam.model == BeamModel::none)
    unused("without beam.model there is no primary beam to correct for",
           [](const std::string& name) { return name.starts_with("beam.") && name != "beam.model"; });
  return parsed;
}

std::string help_text() {
  const Config defaults;
  std::ostringstream out;
  out << "Usage: spip --config FILE [--section.key VALUE ...]\n"
         "Images Measurement Sets in Stokes I, Q, U, V and synthesises Faraday depth cubes.\n"
         "\n"
         "Options:\n"
         "  --config FILE    read settings from an INI file with sections [input] [image]\n"
         "                   [clean] [faraday] [catalogue] [beam] [output] [parallel]; the command line\n"
         "                   wins\n"
         "  --print-config   print the effective configuration as such a file and exit\n"
         "  --plan           print what the run needs per rank (memory, disk, estimated time, from\n"
         "                   the MS metadata and rates timed here) and the sbatch options to ask\n"
         "                   for, then exit; --plan-ranks N plans for N ranks (default: the ranks\n"
         "                   spip runs on), M of them sharing a node's memory with\n"
         "                   --plan-node-ranks M (default: as many as this node's cores hold, at\n"
         "                   the threads of parallel.threads each, and with parallel.device = gpu\n"
         "                   no more than its GPUs), --plan-rates QA_JSON takes the rates from a\n"
         "                   previous run's qa.json (the first few channels of the job, say)\n"
         "                   instead\n"
         "  --break-claim    take the output folder and prefix although another run's claim\n"
         "                   names them (.PREFIX.claim there): for a claim left by a killed job\n"
         "                   of another node, whose end this node cannot see\n"
         "  --help           print this help and exit\n"
         "  --version        print the version and exit\n"
         "\n"
         "Settings (key in the file's [section], or --section.key VALUE):\n"
         "  key                       type     default   unit     description\n";
  std::string_view section;
  for (const Key& key : keys()) {
    if (section_of(key) != section) {
      section = section_of(key);
      out << "[" << section << "]\n";
    }
    const std::vector<std::string> value = key.get(defaults);
    const std::string shown = value.empty() ? "required" : value.front();
    out << "  " << std::left << std::setw(25) << key.name << ' ' << std::setw(8) << key.type
        << ' ' << std::setw(9) << shown << ' ' << std::setw(8) << key.unit << ' '
        << key.description << '\n';
  }
  return out.str();
}

std::string to_ini(const Config& config) {
  // Boost reads '#' as the start of a comment and trims values, so a path with
  // '#' or edge spaces cannot be written back; spip's paths have neither.
  std::ostringstream out;
  out << "# spip configuration; run it with: spip --config FILE\n";
  std::string_view section;
  for (const Key& key : keys()) {
    if (section_of(key) != section) {
      section = section_of(key);
      out << "\n[" << section << "]\n";
    }
    const std::vector<std::string> values = key.get(config);
    if (values.empty()) out << "# " << member_of(key) << " = (required)\n";
    for (const std::string& value : values) out << member_of(key) << " = " << value << '\n';
  }
  return out.str();
}

}  // namespace spip
