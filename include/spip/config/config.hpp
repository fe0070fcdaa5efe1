#pragma once
// The validated run configuration. Only the config room parses strings; every
// other room reads these plain structs. Units are SI except where the name says
// otherwise (arcsec at the config edge, converted by accessors).
#include <optional>
#include <string>
#include <vector>

namespace spip {

enum class Weighting { natural, uniform, briggs };
enum class Device { automatic, cpu, gpu };
// What the joined-polarisation CLEAN searches: |I|, P = |Q + iU|, or sqrt(I^2+Q^2+U^2+V^2).
enum class PeakSearch { stokes_i, linear_pol, full_stokes };
// The primary-beam model the images are corrected with (beam room): none, or an analytic one.
enum class BeamModel { none, gaussian, airy, fits, automatic };

struct InputConfig {
  std::vector<std::string> ms;        // one or more Measurement Set paths
  std::string column = "auto";        // auto | DATA | CORRECTED_DATA | MODEL_DATA
  std::vector<int> fields;            // FIELD_IDs to select, each an input; empty: the MS must have one field
  std::vector<int> spw;               // SPECTRAL_WINDOW ids; empty: each MS must have one window
  bool all_windows = false;           // input.spw = all: every window of every MS
  int channel_begin = 0;              // first channel to image (one input, one window)
  int channel_end = -1;               // one past the last channel; -1: to the end of the band
  double freq_min_hz = 0;             // channels centred in [freq_min, freq_max] (several inputs)
  double freq_max_hz = 0;             // 0: no upper limit
  int row_chunk = 65536;              // rows read per casacore call (bounds reader memory)
  int block_channels = 0;             // channels read per block; 0: from parallel.memory_gb, at most 1 GiB
  // Instead of Measurement Sets, another imager's cubes (FITS, RA/Dec and FREQ axes)
  // for the Faraday stage alone: Q and U, optionally I and V; empty: not given.
  std::string cube_i, cube_q, cube_u, cube_v;
  std::string cube_noise;             // one sigma per channel (text, as RM-Tools takes); empty: from the cubes

  bool cubes() const { return !cube_q.empty() || !cube_u.empty(); }
};

struct ImageConfig {
  int size = 512;                     // pixels per side
  int channels_out = 0;               // bin the merged channels into this many; 0: one per channel
  double channel_width_hz = 0;        // or into bins this wide; 0: see channels_out
  double scale_arcsec = 20.0;         // pixel size
  Weighting weighting = Weighting::briggs;
  double robust = 0.0;                // Briggs robustness, [-2, 2]
  double accuracy = 1e-4;             // requested gridding accuracy, (0, 0.1]
  double padding = 1.2;               // grid padding factor, [1, 4]
  bool wstacking = true;              // false: 2-D imaging (wrong for wide fields)
  bool common_beam = true;            // restore every channel with the largest fitted beam (or image.beam)
  double uv_min = 0;                  // wavelengths; shorter baselines are dropped
  double uv_max = 0;                  // wavelengths; 0: no limit
  double taper_arcsec = 0;            // Gaussian taper, FWHM in the image; 0: none
  // image.beam, the restoring beam chosen by the user (FWHM major and minor, PA east of
  // north); beam_major_arcsec 0: each channel's fitted beam.
  double beam_major_arcsec = 0, beam_minor_arcsec = 0, beam_pa_deg = 0;
  // image.centre, the image's tangent point (J2000, deg); empty: the inputs' phase centre.
  std::vector<double> centre_deg;
};

struct CleanConfig {
  int niter = 0;                      // minor-cycle iteration limit; 0: dirty images only
  double gain = 0.1;                  // minor-cycle loop gain, (0, 1]
  double mgain = 0.8;                 // major-cycle gain, (0, 1]
  double threshold_jy = 0.0;          // absolute stopping threshold
  double auto_threshold = 0.0;        // stop at this many sigma of the search quantity (search_noise); 0: off
  double auto_mask = 0.0;             // clean unmasked to this many sigma, then in the components' mask; 0: off
  PeakSearch peak = PeakSearch::full_stokes;
  int max_major = 20;                 // major-cycle limit
  double divergence_limit = 4.0;      // stop when the search peak rises past this times the lowest cycle start
  bool subminor = true;               // sub-minor loop over the pixels above the cycle's stop
  bool multiscale = false;            // multiscale CLEAN (deconv::MultiscaleClean)
  std::vector<double> scales;         // pixels; empty: deconv::auto_scales of the theoretical beam
  double scale_bias = 0.6;            // WSClean's -multiscale-scale-bias
};

// The Faraday depth cubes spip can write, FDF {real, imag, amp} x {dirty, clean}, as
// faraday.cubes names them; their files take RM-Tools' names, PREFIX-FDF_{real,im,tot}_dirty.fits
// and PREFIX-FDF_clean_{real,im,tot}.fits.
inline std::vector<std::string> faraday_cube_names() {
  return {"real-dirty", "imag-dirty", "amp-dirty", "real-clean", "imag-clean", "amp-clean"};
}

struct FaradayConfig {
  double phi_max = 0.0;               // rad/m^2; 0: RM-Tools default
  double dphi = 0.0;                  // rad/m^2; 0: RMSF FWHM / samples_per_fwhm
  double samples_per_fwhm = 10.0;
  bool variance_weights = false;      // channel weights 1/sigma^2 (residual MAD) instead of uniform
  int rmclean_niter = 1000;           // RM-CLEAN iterations per pixel; 0: no RM-CLEAN
  double rmclean_gain = 0.1;
  double rmclean_cutoff = 5.0;        // stop at this many sigma of the FDF noise
  bool rmclean_xcorr = false;         // find components by cross-correlating with the RMSF
  bool fractional = false;            // divide Q, U by each pixel's Stokes I power law first
  double fractional_threshold = 10.0; // ... where its mean I is above this many sigma; elsewhere blank
  std::string ionosphere;             // table of time and ionospheric RM undone per row; empty: none
  // Faraday depth cubes written, as "real-dirty" ... "amp-clean" (faraday_cube_names);
  // the default is all six, the cubes RM-Tools' rmsynth3d and rmclean3d write.
  std::vector<std::string> cubes = faraday_cube_names();
};

// The polarised-source catalogue made from the Faraday products.
struct CatalogueConfig {
  double threshold = 8.0;             // islands above this many local FDF sigma (POSSUM); 0: none
  int box = 0;                        // local-noise box side, pixels; 0: 20 restoring beams
  double complexity = 0.5;            // Faraday-complex when m2 > complexity * RMSF FWHM
  std::string sources;                // a Stokes I component list (FITS or CSV): measure there instead of finding islands
};

struct BeamConfig {
  BeamModel model = BeamModel::none;  // none: apparent images only
  double dish_diameter_m = 0;         // 0: the MS's ANTENNA DISH_DIAMETER
  double fwhm_factor = 1.02;          // gaussian: FWHM = fwhm_factor lambda / D
  double blockage_m = 0;              // airy: diameter of the central blockage
  double limit = 0.2;                 // corrected images are blank where the response is below this
  std::string fits;                   // fits: the beam cube
};

// The per-channel cubes spip can write, as output.channel_cubes names them: each
// Stokes parameter of the dirty, model, residual, restored ("image") and primary-beam
// corrected ("image-pb") cubes, the PSF and the beam's response ("pb"); the files are
// PREFIX-NAME.fits.
inline std::vector<std::string> channel_cube_names() {
  std::vector<std::string> names;
  for (const char* product : {"dirty", "model", "residual", "image", "image-pb"})
    for (const char* stokes : {"I", "Q", "U", "V"}) names.push_back(std::string(product) + "-" + stokes);
  names.push_back("psf");
  names.push_back("pb");
  return names;
}

struct OutputConfig {
  std::string dir = "spip-out";
  std::string prefix = "spip";
  std::vector<std::string> channel_cubes = channel_cube_names();  // of channel_cube_names(), in its order
  double checkpoint_interval = 10;  // seconds between syncs of the cubes, each followed by its channels' markers
};

struct ParallelConfig {
  Device device = Device::automatic;
  int threads = 0;                    // OpenMP threads per rank; 0: all available cores
  int channels_per_rank = 0;          // fixed channel block per rank; 0: balance unflagged visibilities
  int ranks_per_channel = 0;          // ranks sharing each channel's rows; 0: chosen by planning
  double memory_gb = 0;               // what a rank may hold (GB = 1e9 B); 0: the node's memory over its ranks
  std::string scratch;                // node-local folder for kept planes beyond memory_gb; "": $TMPDIR or /tmp
  double time_limit = 0;              // seconds the run may take (the job's time left); 0: no limit
};

struct Config {
  InputConfig input;
  ImageConfig image;
  CleanConfig clean;
  FaradayConfig faraday;
  CatalogueConfig catalogue;
  BeamConfig beam;
  OutputConfig output;
  ParallelConfig parallel;
  std::string config_file;            // where it was read from; empty: command line only

  double pixel_scale_rad() const;
};

// What the command line asked for besides a run.
enum class CommandAction { run, help, print_config, version, plan };

struct ParsedCommand {
  CommandAction action = CommandAction::run;
  Config config;
  int plan_ranks = 0;             // --plan-ranks; 0: the ranks spip runs on
  int plan_node_ranks = 0;        // --plan-node-ranks; 0: as many as this node's cores (and GPUs) hold
  std::string plan_rates;         // --plan-rates: a previous run's qa.json
  bool break_claim = false;       // --break-claim: clear another run's claim on the output
  // Keys given that the run has no use for, and why: the run warns of them.
  struct Unused {
    std::string why;
    std::vector<std::string> keys;
  };
  std::vector<Unused> unused;
};

// Parses `--config FILE` (INI sections [input] [image] ...) and `--section.key value`
// overrides (the command line wins) and validates every value.
// Throws ConfigError with one line naming the key, the value, the source and what
// was expected.
ParsedCommand parse_command_line(int argc, const char* const argv[]);

// Every key with its type, default and unit.
std::string help_text();

// The effective configuration as an INI file that reproduces the run.
std::string to_ini(const Config& config);

std::string to_string(Weighting weighting);
std::string to_string(Device device);
std::string to_string(PeakSearch peak);
std::string to_string(BeamModel model);

}  // namespace spip
