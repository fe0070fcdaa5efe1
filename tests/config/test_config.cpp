#include "spip/config/config.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <numbers>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "spip/error.hpp"
#include "scratch.hpp"

namespace spip {
namespace {

// Every key the issue fixes; help_text() and to_ini() must cover all of them.
const std::vector<std::string> all_keys = {
    "input.ms",           "input.column",        "input.field",
    "input.spw",          "input.channel_begin", "input.channel_end",
    "input.freq_min",     "input.freq_max",
    "input.row_chunk",    "output.dir",          "output.prefix",
    "image.size",         "image.scale",         "image.weighting",
    "image.robust",       "image.accuracy",      "image.padding",
    "image.wstacking",    "image.beam",          "clean.niter",         "clean.gain",
    "clean.mgain",        "clean.threshold",     "clean.auto_threshold",
    "clean.max_major",    "clean.subminor",      "clean.auto_mask",
    "faraday.phi_max",    "faraday.dphi",        "faraday.samples_per_fwhm",
    "parallel.device",    "parallel.threads"};

ParsedCommand parse(std::vector<std::string> args) {
  args.insert(args.begin(), "spip");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  argv.push_back(nullptr);
  return parse_command_line(static_cast<int>(args.size()), argv.data());
}

// A file under the test temp dir, named after the running test so that tests
// run in parallel by CTest never share one.
std::string write_config(const std::string& contents, const std::string& tag = "run") {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "_" + info->name() + "_" + tag;
  for (char& c : name)
    if (c == '/') c = '_';
  const std::string path = spip::test::scratch_path(name + ".cfg").string();
  std::ofstream(path) << contents;
  return path;
}

// Runs `parse_it`, expects a ConfigError whose one-line message contains every
// fragment, and returns the message.
std::string expect_config_error(const std::function<void()>& parse_it,
                                std::initializer_list<std::string> fragments) {
  try {
    parse_it();
  } catch (const ConfigError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(error.code(), ExitCode::bad_config);
    for (const std::string& fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "'" << fragment << "' not in: " << message;
    return message;
  }
  ADD_FAILURE() << "no ConfigError";
  return {};
}

void expect_same(const Config& a, const Config& b) {
  EXPECT_EQ(a.input.ms, b.input.ms);
  EXPECT_EQ(a.input.column, b.input.column);
  EXPECT_EQ(a.input.fields, b.input.fields);
  EXPECT_EQ(a.input.spw, b.input.spw);
  EXPECT_EQ(a.input.all_windows, b.input.all_windows);
  EXPECT_EQ(a.input.freq_min_hz, b.input.freq_min_hz);
  EXPECT_EQ(a.input.freq_max_hz, b.input.freq_max_hz);
  EXPECT_EQ(a.image.channels_out, b.image.channels_out);
  EXPECT_EQ(a.image.channel_width_hz, b.image.channel_width_hz);
  EXPECT_EQ(a.input.channel_begin, b.input.channel_begin);
  EXPECT_EQ(a.input.channel_end, b.input.channel_end);
  EXPECT_EQ(a.input.row_chunk, b.input.row_chunk);
  // Exact equality on purpose: to_ini must print doubles that read back bit for bit.
  EXPECT_EQ(a.image.size, b.image.size);
  EXPECT_EQ(a.image.scale_arcsec, b.image.scale_arcsec);
  EXPECT_EQ(a.image.weighting, b.image.weighting);
  EXPECT_EQ(a.image.robust, b.image.robust);
  EXPECT_EQ(a.image.accuracy, b.image.accuracy);
  EXPECT_EQ(a.image.padding, b.image.padding);
  EXPECT_EQ(a.image.wstacking, b.image.wstacking);
  EXPECT_EQ(a.image.beam_major_arcsec, b.image.beam_major_arcsec);
  EXPECT_EQ(a.image.beam_minor_arcsec, b.image.beam_minor_arcsec);
  EXPECT_EQ(a.image.beam_pa_deg, b.image.beam_pa_deg);
  EXPECT_EQ(a.clean.niter, b.clean.niter);
  EXPECT_EQ(a.clean.gain, b.clean.gain);
  EXPECT_EQ(a.clean.mgain, b.clean.mgain);
  EXPECT_EQ(a.clean.threshold_jy, b.clean.threshold_jy);
  EXPECT_EQ(a.clean.auto_threshold, b.clean.auto_threshold);
  EXPECT_EQ(a.faraday.phi_max, b.faraday.phi_max);
  EXPECT_EQ(a.faraday.dphi, b.faraday.dphi);
  EXPECT_EQ(a.faraday.samples_per_fwhm, b.faraday.samples_per_fwhm);
  EXPECT_EQ(a.output.dir, b.output.dir);
  EXPECT_EQ(a.output.prefix, b.output.prefix);
  EXPECT_EQ(a.parallel.device, b.parallel.device);
  EXPECT_EQ(a.parallel.threads, b.parallel.threads);
}

const char* const full_file = R"(# every section, every key
[input]
ms = first.ms
ms = second.ms
column = CORRECTED_DATA
field = 2
spw = 1
channel_begin = 4
channel_end = 36
row_chunk = 1000

[image]
size = 1024
scale = 12.5
weighting = uniform
robust = -0.5
accuracy = 1e-5
padding = 1.5
wstacking = false
beam = 45.5, 30, -12.25

[clean]
niter = 5000
gain = 0.2
mgain = 0.85
threshold = 0.005
auto_threshold = 3

[faraday]
phi_max = 100
dphi = 0.5
samples_per_fwhm = 8

[output]
dir = out/full
prefix = full

[parallel]
device = gpu
threads = 4
)";

TEST(Config, DefaultsFromTheHeader) {
  const ParsedCommand parsed = parse({"--input.ms", "a.ms"});
  EXPECT_EQ(parsed.action, CommandAction::run);
  EXPECT_EQ(parsed.config.config_file, "");
  Config expected;
  expected.input.ms = {"a.ms"};
  expect_same(parsed.config, expected);
  // Spelled out as well, so a changed default in the header is noticed here.
  EXPECT_EQ(parsed.config.input.column, "auto");
  EXPECT_TRUE(parsed.config.input.fields.empty());
  EXPECT_EQ(parsed.config.input.channel_end, -1);
  EXPECT_EQ(parsed.config.input.row_chunk, 65536);
  EXPECT_EQ(parsed.config.image.size, 512);
  EXPECT_EQ(parsed.config.image.scale_arcsec, 20.0);
  EXPECT_EQ(parsed.config.image.weighting, Weighting::briggs);
  EXPECT_EQ(parsed.config.image.accuracy, 1e-4);
  EXPECT_TRUE(parsed.config.image.wstacking);
  EXPECT_EQ(parsed.config.clean.niter, 0);
  EXPECT_EQ(parsed.config.faraday.samples_per_fwhm, 10.0);
  EXPECT_EQ(parsed.config.output.dir, "spip-out");
  EXPECT_EQ(parsed.config.parallel.device, Device::automatic);
}

// input.spw takes a list or all; -1 is the old default (each MS's only window).
TEST(Config, SpectralWindowsAndFrequencyRange) {
  const Config listed = parse({"--input.ms", "a.ms", "--input.spw", "0, 2,3", "--input.freq_min", "1.2e8"}).config;
  EXPECT_EQ(listed.input.spw, (std::vector<int>{0, 2, 3}));
  EXPECT_FALSE(listed.input.all_windows);
  EXPECT_EQ(listed.input.freq_min_hz, 1.2e8);
  const Config all = parse({"--input.ms", "a.ms", "--input.spw", "all"}).config;
  EXPECT_TRUE(all.input.all_windows);
  EXPECT_TRUE(all.input.spw.empty());
  const Config one = parse({"--input.ms", "a.ms", "--input.spw", "-1"}).config;
  EXPECT_TRUE(one.input.spw.empty());
  EXPECT_FALSE(one.input.all_windows);
  expect_config_error([] { parse({"--input.ms", "a.ms", "--input.freq_min", "2e8", "--input.freq_max", "1e8"}); },
                      {"input.freq_max", "input.freq_min"});
  EXPECT_EQ(parse({"--input.ms", "a.ms", "--image.channels_out", "10"}).config.image.channels_out, 10);
  expect_config_error(
      [] { parse({"--input.ms", "a.ms", "--image.channels_out", "10", "--image.channel_width", "4e6"}); },
      {"image.channels_out", "image.channel_width"});
}

TEST(Config, BeamKeys) {
  const Config defaults = parse({"--input.ms", "a.ms"}).config;
  EXPECT_EQ(defaults.beam.model, BeamModel::none);
  EXPECT_EQ(defaults.beam.dish_diameter_m, 0.0);
  EXPECT_EQ(defaults.beam.fwhm_factor, 1.02);
  EXPECT_EQ(defaults.beam.limit, 0.2);
  const Config set = parse({"--input.ms", "a.ms", "--beam.model", "airy", "--beam.dish_diameter", "13.5",
                            "--beam.blockage", "1.5", "--beam.limit", "0.1"})
                         .config;
  EXPECT_EQ(set.beam.model, BeamModel::airy);
  EXPECT_EQ(set.beam.dish_diameter_m, 13.5);
  EXPECT_EQ(set.beam.blockage_m, 1.5);
  EXPECT_EQ(set.beam.limit, 0.1);
  EXPECT_NE(to_ini(set).find("[beam]\nmodel = airy\n"), std::string::npos) << to_ini(set);
  EXPECT_TRUE(defaults.beam.fits.empty());
  const Config cube = parse({"--input.ms", "a.ms", "--beam.model", "fits", "--beam.fits", "askap.fits"}).config;
  EXPECT_EQ(cube.beam.model, BeamModel::fits);
  EXPECT_EQ(cube.beam.fits, "askap.fits");
  EXPECT_NE(to_ini(cube).find("fits = askap.fits\n"), std::string::npos) << to_ini(cube);
  EXPECT_EQ(parse({"--input.ms", "a.ms", "--beam.model", "auto"}).config.beam.model, BeamModel::automatic);
  EXPECT_NE(to_ini(parse({"--input.ms", "a.ms", "--beam.model", "auto"}).config).find("[beam]\nmodel = auto\n"),
            std::string::npos);
  // Beam products named without a beam, and a cube without its model, are refused.
  expect_config_error([] { parse({"--input.ms", "a.ms", "--output.channel_cubes", "image,image-pb-Q"}); },
                      {"output.channel_cubes names image-pb-Q, which needs a primary beam"});
  expect_config_error([] { parse({"--input.ms", "a.ms", "--output.channel_cubes", "pb"}); }, {"beam.model"});
  expect_config_error([] { parse({"--input.ms", "a.ms", "--beam.model", "airy", "--beam.fits", "b.fits"}); },
                      {"beam.fits = b.fits is set but beam.model is airy"});
  EXPECT_NO_THROW(parse({"--input.ms", "a.ms", "--output.channel_cubes", "image,pb", "--beam.model", "auto"}));
  expect_config_error([] { parse({"--input.ms", "a.ms", "--beam.model", "auto", "--beam.dish_diameter", "25"}); },
                      {"beam.model = auto takes its beam whole"});
  expect_config_error(
      [] { parse({"--input.ms", "a.ms", "--beam.model", "fits", "--beam.fits", "b.fits", "--beam.blockage", "2"}); },
      {"beam.model = fits takes its beam whole"});
}

TEST(Config, AnotherImagersCubes) {
  const Config cubes = parse({"--input.cube_q", "q.fits", "--input.cube_u", "u.fits", "--input.cube_noise", "n.txt"}).config;
  EXPECT_TRUE(cubes.input.cubes());
  EXPECT_TRUE(cubes.input.ms.empty());
  EXPECT_EQ(cubes.input.cube_noise, "n.txt");
  EXPECT_FALSE(parse({"--input.ms", "a.ms"}).config.input.cubes());
  expect_config_error([] { parse({"--input.cube_q", "q.fits"}); }, {"input.cube_q", "input.cube_u"});
  expect_config_error([] { parse({"--input.cube_u", "u.fits"}); }, {"input.cube_u", "input.cube_q"});
  expect_config_error([] { parse({"--input.ms", "a.ms", "--input.cube_q", "q.fits", "--input.cube_u", "u.fits"}); },
                      {"input.cube_q", "input.ms"});
  expect_config_error([] { parse({"--input.ms", "a.ms", "--input.cube_i", "i.fits"}); }, {"input.cube_i"});
  expect_config_error([] { parse({"--input.cube_q", "q.fits", "--input.cube_u", "u.fits", "--beam.model", "airy"}); },
                      {"beam.model", "input.cube_q"});
  // Keys for imaging and CLEAN given with cubes are named (the run warns of them); the
  // products' beam, the Faraday stage's and the run's own keys are used.
  const ParsedCommand unused = parse({"--input.cube_q", "q.fits", "--input.cube_u", "u.fits", "--clean.niter", "100",
                                      "--image.size", "256", "--image.beam", "30,30,0", "--input.column", "DATA",
                                      "--beam.limit", "0.3", "--faraday.phi_max", "100", "--parallel.threads", "2"});
  ASSERT_EQ(unused.unused.size(), 1u);
  EXPECT_EQ(unused.unused[0].keys, (std::vector<std::string>{"input.column", "image.size", "clean.niter", "beam.limit"}));
  EXPECT_TRUE(parse({"--input.ms", "a.ms", "--clean.niter", "100"}).unused.empty());
  // Without a beam model, the beam's own keys.
  const ParsedCommand no_beam = parse({"--input.ms", "a.ms", "--beam.limit", "0.3", "--beam.dish_diameter", "25"});
  ASSERT_EQ(no_beam.unused.size(), 1u);
  EXPECT_EQ(no_beam.unused[0].keys, (std::vector<std::string>{"beam.dish_diameter", "beam.limit"}));
  EXPECT_TRUE(parse({"--input.ms", "a.ms", "--beam.model", "airy", "--beam.dish_diameter", "25"}).unused.empty());
  // Keys given at their defaults, as a run's own configuration file gives every key.
  EXPECT_TRUE(parse({"--input.ms", "a.ms", "--beam.limit", "0.2", "--beam.fits", ""}).unused.empty());
}

TEST(Config, ImageCentre) {
  EXPECT_TRUE(parse({"--input.ms", "a.ms"}).config.image.centre_deg.empty());
  const Config set = parse({"--input.ms", "a.ms", "--image.centre", " 359.5, -30.25"}).config;
  EXPECT_EQ(set.image.centre_deg, (std::vector<double>{359.5, -30.25}));
  EXPECT_NE(to_ini(set).find("centre = 359.5,-30.25\n"), std::string::npos) << to_ini(set);
  EXPECT_TRUE(parse({"--input.ms", "a.ms", "--image.centre", ""}).config.image.centre_deg.empty());
  for (const char* bad : {"360,0", "-1,0", "10,91", "10", "10,x", "10,20,30"})
    expect_config_error([&] { parse({"--input.ms", "a.ms", "--image.centre", bad}); }, {"image.centre"});
}

TEST(Config, MultiscaleKeys) {
  const Config defaults = parse({"--input.ms", "a.ms"}).config;
  EXPECT_FALSE(defaults.clean.multiscale);
  EXPECT_TRUE(defaults.clean.scales.empty());
  EXPECT_EQ(defaults.clean.scale_bias, 0.6);
  const Config set = parse({"--input.ms", "a.ms", "--clean.multiscale", "true", "--clean.scales", "0, 8,16.5",
                            "--clean.scale_bias", "0.4"})
                         .config;
  EXPECT_TRUE(set.clean.multiscale);
  EXPECT_EQ(set.clean.scales, (std::vector<double>{0, 8, 16.5}));
  EXPECT_EQ(set.clean.scale_bias, 0.4);
  expect_config_error([] { parse({"--input.ms", "a.ms", "--clean.scales", "0,8,8"}); }, {"clean.scales"});
  expect_config_error([] { parse({"--input.ms", "a.ms", "--clean.scales", "-4"}); }, {"clean.scales"});
  expect_config_error([] { parse({"--input.ms", "a.ms", "--clean.scale_bias", "0"}); }, {"clean.scale_bias"});
  // A kernel wider than half the image does not fit the scale PSFs.
  EXPECT_NO_THROW(parse({"--input.ms", "a.ms", "--image.size", "256", "--clean.scales", "126"}));
  expect_config_error([] { parse({"--input.ms", "a.ms", "--image.size", "256", "--clean.scales", "0,130"}); },
                      {"clean.scales", "image.size"});
}

TEST(Config, FileWithEverySection) {
  const std::string path = write_config(full_file);
  const ParsedCommand parsed = parse({"--config", path});
  EXPECT_EQ(parsed.action, CommandAction::run);
  const Config& c = parsed.config;
  EXPECT_EQ(c.config_file, path);
  EXPECT_EQ(c.input.ms, (std::vector<std::string>{"first.ms", "second.ms"}));
  EXPECT_EQ(c.input.column, "CORRECTED_DATA");
  EXPECT_EQ(c.input.fields, std::vector<int>{2});
  EXPECT_EQ(c.image.beam_major_arcsec, 45.5);
  EXPECT_EQ(c.image.beam_minor_arcsec, 30.0);
  EXPECT_EQ(c.image.beam_pa_deg, -12.25);
  EXPECT_EQ(c.input.spw, std::vector<int>{1});
  EXPECT_EQ(c.input.channel_begin, 4);
  EXPECT_EQ(c.input.channel_end, 36);
  EXPECT_EQ(c.input.row_chunk, 1000);
  EXPECT_EQ(c.image.size, 1024);
  EXPECT_EQ(c.image.scale_arcsec, 12.5);
  EXPECT_EQ(c.image.weighting, Weighting::uniform);
  EXPECT_EQ(c.image.robust, -0.5);
  EXPECT_EQ(c.image.accuracy, 1e-5);
  EXPECT_EQ(c.image.padding, 1.5);
  EXPECT_FALSE(c.image.wstacking);
  EXPECT_EQ(c.clean.niter, 5000);
  EXPECT_EQ(c.clean.gain, 0.2);
  EXPECT_EQ(c.clean.mgain, 0.85);
  EXPECT_EQ(c.clean.threshold_jy, 0.005);
  EXPECT_EQ(c.clean.auto_threshold, 3.0);
  EXPECT_EQ(c.faraday.phi_max, 100.0);
  EXPECT_EQ(c.faraday.dphi, 0.5);
  EXPECT_EQ(c.faraday.samples_per_fwhm, 8.0);
  EXPECT_EQ(c.output.dir, "out/full");
  EXPECT_EQ(c.output.prefix, "full");
  EXPECT_EQ(c.parallel.device, Device::gpu);
  EXPECT_EQ(c.parallel.threads, 4);
}

TEST(Config, CommandLineOverridesFile) {
  const std::string path = write_config(full_file);
  // Options on either side of --config: the order must not matter.
  const Config c = parse({"--image.size", "256", "--config", path, "--clean.gain", "0.05",
                          "--parallel.device", "cpu", "--image.wstacking", "true"})
                       .config;
  EXPECT_EQ(c.image.size, 256);
  EXPECT_EQ(c.clean.gain, 0.05);
  EXPECT_EQ(c.parallel.device, Device::cpu);
  EXPECT_TRUE(c.image.wstacking);
  // Untouched keys keep the file's values.
  EXPECT_EQ(c.image.scale_arcsec, 12.5);
  EXPECT_EQ(c.clean.niter, 5000);
}

TEST(Config, MultipleInputMs) {
  EXPECT_EQ(parse({"--input.ms", "a.ms", "b.ms", "--input.ms", "c.ms"}).config.input.ms,
            (std::vector<std::string>{"a.ms", "b.ms", "c.ms"}));
  // A multitoken list stops at the next option.
  const Config c = parse({"--input.ms", "a.ms", "b.ms", "--image.size", "64"}).config;
  EXPECT_EQ(c.input.ms, (std::vector<std::string>{"a.ms", "b.ms"}));
  EXPECT_EQ(c.image.size, 64);

  const std::string path = write_config(full_file);
  EXPECT_EQ(parse({"--config", path}).config.input.ms,
            (std::vector<std::string>{"first.ms", "second.ms"}));
  // The command line replaces the file's list rather than adding to it.
  EXPECT_EQ(parse({"--config", path, "--input.ms", "x.ms"}).config.input.ms,
            (std::vector<std::string>{"x.ms"}));
}

TEST(Config, UnknownKeyInFile) {
  const std::string path = write_config("[input]\nms = a.ms\n[image]\nsise = 512\n");
  expect_config_error([&] { parse({"--config", path}); }, {"image.sise", path});
}

TEST(Config, UnknownSectionInFile) {
  const std::string path = write_config("[imaging]\nsize = 512\n");
  expect_config_error([&] { parse({"--config", path, "--input.ms", "a.ms"}); },
                      {"imaging.size", path});
}

TEST(Config, UnknownKeyOnCommandLine) {
  expect_config_error([] { parse({"--input.ms", "a.ms", "--image.sise", "512"}); },
                      {"image.sise", "command line"});
}

TEST(Config, AbbreviatedKeyIsNotGuessed) {
  expect_config_error([] { parse({"--input.ms", "a.ms", "--image.siz", "512"}); },
                      {"image.siz", "command line"});
}

TEST(Config, RepeatedKeyInFile) {
  const std::string path = write_config("[input]\nms = a.ms\n[image]\nsize = 64\nsize = 128\n");
  expect_config_error([&] { parse({"--config", path}); }, {"image.size", path});
}

TEST(Config, MissingValueOnCommandLine) {
  expect_config_error([] { parse({"--input.ms", "a.ms", "--image.size"}); },
                      {"image.size", "command line"});
}

TEST(Config, MalformedValueInFile) {
  const std::string path = write_config("[input]\nms = a.ms\n[image]\nsize = abc\n");
  const std::string message = expect_config_error([&] { parse({"--config", path}); },
                                                  {"image.size = abc", path, "expected"});
  EXPECT_EQ(message, "image.size = abc in " + path + ": expected an even integer >= 16");
}

TEST(Config, MalformedValuesOnCommandLine) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"image.size", "512.0"},
           {"image.size", "5x"},
           {"image.size", "99999999999999999999"},
           {"image.scale", "20arcsec"},
           {"image.scale", "nan"},
           {"image.scale", "inf"},
           {"image.scale", ""},
           {"image.wstacking", "maybe"},
           {"image.weighting", "Briggs"},
           {"input.column", "data"},
           {"parallel.device", "cuda"}}) {
    SCOPED_TRACE(key + " = " + value);
    expect_config_error([&] { parse({"--input.ms", "a.ms", "--" + key, value}); },
                        {key + " = " + value + " on the command line: expected"});
  }
}

TEST(Config, AcceptedSpellings) {
  EXPECT_FALSE(parse({"--input.ms", "a", "--image.wstacking", "no"}).config.image.wstacking);
  EXPECT_FALSE(parse({"--input.ms", "a", "--image.wstacking", "0"}).config.image.wstacking);
  EXPECT_TRUE(parse({"--input.ms", "a", "--image.wstacking", "On"}).config.image.wstacking);
  EXPECT_EQ(parse({"--input.ms", "a", "--image.robust", "+1.5"}).config.image.robust, 1.5);
  EXPECT_EQ(parse({"--input.ms", "a", "--image.robust", "-2"}).config.image.robust, -2.0);
  EXPECT_EQ(parse({"--input.ms", "a", "--image.accuracy", "1e-6"}).config.image.accuracy, 1e-6);
  EXPECT_EQ(parse({"--input.ms", "a", "--image.weighting", "natural"}).config.image.weighting,
            Weighting::natural);
  EXPECT_EQ(parse({"--input.ms", "a", "--input.column", "MODEL_DATA"}).config.input.column,
            "MODEL_DATA");
}

const char* const beam_expected = "MAJOR,MINOR,PA in arcsec, arcsec, deg with MAJOR >= MINOR > 0, or nothing";

struct OutOfRange {
  std::string key;
  std::string value;
  std::string expected;
};

void PrintTo(const OutOfRange& c, std::ostream* out) { *out << c.key << " = " << c.value; }

class OutOfRangeTest : public testing::TestWithParam<OutOfRange> {};

TEST_P(OutOfRangeTest, RejectedInFile) {
  const OutOfRange& c = GetParam();
  const std::string section = c.key.substr(0, c.key.find('.'));
  const std::string member = c.key.substr(c.key.find('.') + 1);
  const std::string ms = c.key == "input.ms" ? "" : "[input]\nms = a.ms\n";
  const std::string path =
      write_config(ms + "[" + section + "]\n" + member + " = " + c.value + "\n");
  expect_config_error([&] { parse({"--config", path}); },
                      {c.key + " = " + c.value + " in " + path + ": expected " + c.expected});
}

TEST_P(OutOfRangeTest, RejectedOnCommandLine) {
  const OutOfRange& c = GetParam();
  expect_config_error([&] { parse({"--input.ms", "a.ms", "--" + c.key, c.value}); },
                      {c.key + " = " + c.value + " on the command line: expected " + c.expected});
}

INSTANTIATE_TEST_SUITE_P(
    Config, OutOfRangeTest,
    testing::Values(OutOfRange{"image.size", "0", "an even integer >= 16"},
                    OutOfRange{"image.beam", "10,20,0", beam_expected},
                    OutOfRange{"image.beam", "20,10", beam_expected},
                    OutOfRange{"image.beam", "20,0,5", beam_expected},
                    OutOfRange{"image.beam", "20,10,x", beam_expected},
                    OutOfRange{"image.size", "14", "an even integer >= 16"},
                    OutOfRange{"image.size", "-512", "an even integer >= 16"},
                    OutOfRange{"image.size", "513", "an even integer >= 16"},
                    OutOfRange{"image.scale", "0", "a number > 0"},
                    OutOfRange{"image.scale", "-1", "a number > 0"},
                    OutOfRange{"image.robust", "3", "a number in [-2, 2]"},
                    OutOfRange{"image.robust", "-2.5", "a number in [-2, 2]"},
                    OutOfRange{"image.accuracy", "0.2", "a number in [1e-6, 0.1]"},
                    OutOfRange{"image.accuracy", "9e-7", "a number in [1e-6, 0.1]"},
                    OutOfRange{"image.accuracy", "0", "a number in [1e-6, 0.1]"},
                    OutOfRange{"image.padding", "0.9", "a number in [1, 4]"},
                    OutOfRange{"image.padding", "4.5", "a number in [1, 4]"},
                    OutOfRange{"image.weighting", "robust", "one of natural, uniform, briggs"},
                    OutOfRange{"image.uv_min", "-1", "a number >= 0"},
                    OutOfRange{"image.uv_max", "-5", "a number >= 0"},
                    OutOfRange{"image.taper", "-10", "a number >= 0"},
                    OutOfRange{"clean.peak", "q", "one of i, pol, iquv"},
                    OutOfRange{"clean.max_major", "0", "an integer >= 1"},
                    OutOfRange{"clean.niter", "-1", "an integer >= 0"},
                    OutOfRange{"clean.gain", "0", "a number in (0, 1]"},
                    OutOfRange{"clean.gain", "1.1", "a number in (0, 1]"},
                    OutOfRange{"clean.mgain", "0", "a number in (0, 1]"},
                    OutOfRange{"clean.mgain", "2", "a number in (0, 1]"},
                    OutOfRange{"clean.threshold", "-0.001", "a number >= 0"},
                    OutOfRange{"clean.auto_threshold", "-3", "a number >= 0"},
                    OutOfRange{"faraday.phi_max", "-100", "a number >= 0"},
                    OutOfRange{"faraday.rmclean_niter", "-1", "an integer >= 0"},
                    OutOfRange{"faraday.rmclean_gain", "0", "a number in (0, 1]"},
                    OutOfRange{"faraday.rmclean_cutoff", "-1", "a number >= 0"},
                    OutOfRange{"faraday.dphi", "-0.5", "a number >= 0"},
                    OutOfRange{"faraday.samples_per_fwhm", "0", "a number >= 1"},
                    OutOfRange{"faraday.samples_per_fwhm", "0.5", "a number >= 1"},
                    OutOfRange{"parallel.threads", "-1", "an integer >= 0"},
                    OutOfRange{"parallel.channels_per_rank", "-2", "an integer >= 0"},
                    OutOfRange{"parallel.memory_gb", "-1", "a number >= 0"},
                    OutOfRange{"faraday.cubes", "clean-phase", "all, none, or a comma-separated list of real-dirty, "
                               "imag-dirty, amp-dirty, real-clean, imag-clean, amp-clean"},
                    OutOfRange{"faraday.cubes", "amp-clean,amp-clean", "all, none, or a comma-separated list of "
                               "real-dirty, imag-dirty, amp-dirty, real-clean, imag-clean, amp-clean"},
                    OutOfRange{"output.channel_cubes", "weights", "all, none, or a comma-separated list of dirty, "
                               "model, residual, image, restored, image-pb (each alone or with -I, -Q, -U, -V), psf "
                               "and pb"},
                    OutOfRange{"output.channel_cubes", "image-X", "all, none, or a comma-separated list of dirty, "
                               "model, residual, image, restored, image-pb (each alone or with -I, -Q, -U, -V), psf "
                               "and pb"},
                    OutOfRange{"image.common_beam", "maybe", "true or false"},
                    OutOfRange{"beam.model", "cosine", "one of none, gaussian, airy"},
                    OutOfRange{"beam.dish_diameter", "-25", "a number >= 0"},
                    OutOfRange{"beam.fwhm_factor", "0", "a number > 0"},
                    OutOfRange{"beam.blockage", "-1", "a number >= 0"},
                    OutOfRange{"beam.limit", "0", "a number in (0, 1)"},
                    OutOfRange{"beam.limit", "1", "a number in (0, 1)"},
                    OutOfRange{"parallel.device", "tpu", "one of auto, cpu, gpu"},
                    OutOfRange{"input.row_chunk", "0", "an integer >= 1"},
                    OutOfRange{"input.block_channels", "-1", "an integer >= 0"},
                    OutOfRange{"input.channel_begin", "-1", "an integer >= 0"},
                    OutOfRange{"input.channel_end", "0", "-1 or an integer > input.channel_begin"},
                    OutOfRange{"input.channel_end", "-2", "-1 or an integer > input.channel_begin"},
                    OutOfRange{"input.field", "-2", "-1, or field ids >= 0 separated by commas"},
                    OutOfRange{"input.field", "0,0", "-1, or field ids >= 0 separated by commas"},
                    OutOfRange{"input.spw", "-2", "-1, all, or spectral window ids >= 0 separated by commas"},
                    OutOfRange{"input.spw", "1,1", "-1, all, or spectral window ids >= 0 separated by commas"},
                    OutOfRange{"input.spw", "1,x", "-1, all, or spectral window ids >= 0 separated by commas"},
                    OutOfRange{"input.freq_min", "-1", "a number >= 0"},
                    OutOfRange{"input.column", "FLAG", "one of auto, DATA, CORRECTED_DATA, MODEL_DATA"},
                    OutOfRange{"input.ms", "", "a Measurement Set path"},
                    OutOfRange{"output.dir", "", "a non-empty path"},
                    OutOfRange{"output.prefix", "", "a non-empty file name prefix without '/', not starting with '.'"},
                    OutOfRange{"output.prefix", "a/b", "a non-empty file name prefix without '/', not starting with '.'"},
                    OutOfRange{"output.prefix", ".", "a non-empty file name prefix without '/', not starting with '.'"},
                    OutOfRange{"output.prefix", ".hidden", "a non-empty file name prefix without '/', not starting with '.'"}),
    [](const testing::TestParamInfo<OutOfRange>& info) {
      std::string name = info.param.key + "_" + info.param.value + "_" + std::to_string(info.index);
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

TEST(Config, BoundaryValuesAccepted) {
  const Config c = parse({"--input.ms", "a.ms", "--image.size", "16", "--image.robust", "2",
                          "--image.accuracy", "0.1", "--image.padding", "4", "--clean.gain", "1",
                          "--clean.mgain", "1", "--clean.niter", "0", "--input.channel_begin",
                          "3", "--input.channel_end", "4", "--input.field", "-1",
                          "--input.row_chunk", "1", "--faraday.phi_max", "0"})
                       .config;
  EXPECT_EQ(c.image.size, 16);
  EXPECT_EQ(c.image.padding, 4.0);
  EXPECT_EQ(c.input.channel_end, 4);
}

TEST(Config, FaradayCubeSelection) {
  EXPECT_EQ(Config{}.faraday.cubes, faraday_cube_names());
  EXPECT_EQ(faraday_cube_names().size(), 6u);
  const auto cubes = [](const std::string& value) {
    return parse({"--input.ms", "a.ms", "--faraday.cubes", value}).config.faraday.cubes;
  };
  EXPECT_TRUE(cubes("none").empty());
  EXPECT_EQ(cubes("all"), faraday_cube_names());
  // Any order and spacing in, the canonical order out, so to_ini() writes one text.
  EXPECT_EQ(cubes("amp-clean, real-dirty"), (std::vector<std::string>{"real-dirty", "amp-clean"}));
  const Config chosen = parse({"--input.ms", "a.ms", "--faraday.cubes", "amp-clean,amp-dirty"}).config;
  EXPECT_NE(to_ini(chosen).find("cubes = amp-dirty,amp-clean\n"), std::string::npos);
  EXPECT_NE(to_ini(Config{}).find("cubes = all\n"), std::string::npos);
}

TEST(Config, ChannelCubeSelection) {
  EXPECT_EQ(Config{}.output.channel_cubes, channel_cube_names());
  EXPECT_EQ(channel_cube_names().size(), 22u);
  const auto cubes = [](const std::string& value) {
    return parse({"--input.ms", "a.ms", "--output.channel_cubes", value, "--beam.model", "auto"})
        .config.output.channel_cubes;
  };
  EXPECT_TRUE(cubes("none").empty());
  EXPECT_EQ(cubes("all"), channel_cube_names());
  // A product stands for each of its Stokes parameters, "restored" for "image"; the
  // canonical order comes out, so that to_ini() writes one text per selection.
  EXPECT_EQ(cubes("psf, restored-Q, residual"),
            (std::vector<std::string>{"residual-I", "residual-Q", "residual-U", "residual-V", "image-Q", "psf"}));
  EXPECT_EQ(cubes("image-Q,image"), (std::vector<std::string>{"image-I", "image-Q", "image-U", "image-V"}));
  // "image" is not "image-pb", which stands for its own four cubes; "pb" is the beam.
  EXPECT_EQ(cubes("image-pb,pb"),
            (std::vector<std::string>{"image-pb-I", "image-pb-Q", "image-pb-U", "image-pb-V", "pb"}));
  const Config chosen = parse({"--input.ms", "a.ms", "--output.channel_cubes", "restored-I,psf"}).config;
  EXPECT_NE(to_ini(chosen).find("channel_cubes = image-I,psf\n"), std::string::npos);
  EXPECT_NE(to_ini(Config{}).find("channel_cubes = all\n"), std::string::npos);
}

TEST(Config, ChannelEndNotAfterChannelBegin) {
  const std::string path = write_config("[input]\nms = a.ms\nchannel_end = 10\n");
  // channel_end comes from the file, channel_begin from the command line: the
  // message names the source of channel_end and the begin it was compared with.
  expect_config_error([&] { parse({"--config", path, "--input.channel_begin", "10"}); },
                      {"input.channel_end = 10 in " + path, "input.channel_begin (10)"});
}

TEST(Config, InputMsRequiredForRun) {
  expect_config_error([] { parse({}); }, {"input.ms"});
  const std::string path = write_config("[image]\nsize = 64\n");
  expect_config_error([&] { parse({"--config", path}); }, {"input.ms"});
}

TEST(Config, MissingFile) {
  const std::string path = spip::test::scratch_path("no_such_file.cfg").string();
  expect_config_error([&] { parse({"--config", path, "--input.ms", "a.ms"}); }, {path});
  const std::string dir = spip::test::scratch_dir().string();
  expect_config_error([&] { parse({"--config", dir, "--input.ms", "a.ms"}); }, {dir});
}

TEST(Config, Actions) {
  // help and version need neither input.ms nor a readable file.
  EXPECT_EQ(parse({"--help"}).action, CommandAction::help);
  EXPECT_EQ(parse({"--version"}).action, CommandAction::version);
  EXPECT_EQ(parse({"--help", "--config", "/no/such/file.cfg"}).action, CommandAction::help);
  // print-config works without input.ms so that it can write a template.
  EXPECT_EQ(parse({"--print-config"}).action, CommandAction::print_config);
  // ...but still validates.
  expect_config_error([] { parse({"--print-config", "--image.size", "3"}); },
                      {"image.size = 3 on the command line"});
}

TEST(Config, StrayWordOnCommandLine) {
  // e.g. a second value after a single-valued key; boost alone would ignore it.
  expect_config_error([] { parse({"--input.ms", "a.ms", "--image.size", "64", "128"}); },
                      {"128", "command line"});
  expect_config_error([] { parse({"--help", "oops"}); }, {"oops", "command line"});
}

TEST(Config, ToIniRoundTrip) {
  const std::string path = write_config(full_file);
  // Doubles that print badly with default stream precision.
  const Config original = parse({"--config", path, "--image.scale", "0.30000000000000004",
                                 "--clean.threshold", "1e-300", "--faraday.dphi",
                                 "0.3333333333333333", "--faraday.phi_max", "123456789.125",
                                 "--image.accuracy", "3.3333333333333333e-6"})
                              .config;
  const std::string ini = to_ini(original);
  const std::string again_path = write_config(ini, "again");
  const ParsedCommand again = parse({"--config", again_path});
  expect_same(again.config, original);
  EXPECT_EQ(again.config.image.scale_arcsec, 0.1 + 0.2);
  EXPECT_EQ(to_ini(again.config), ini);
}

TEST(Config, ToIniRoundTripOfDefaults) {
  Config defaults;
  defaults.input.ms = {"a.ms"};
  const std::string path = write_config(to_ini(defaults));
  expect_same(parse({"--config", path}).config, defaults);
}

TEST(Config, ToIniIsReadable) {
  Config config;
  config.input.ms = {"a.ms", "b.ms"};
  const std::string ini = to_ini(config);
  for (const char* line : {"[input]\n", "ms = a.ms\nms = b.ms\n", "[image]\n", "size = 512\n",
                           "scale = 20\n", "accuracy = 0.0001\n", "padding = 1.2\n",
                           "wstacking = true\n", "weighting = briggs\n", "[parallel]\n",
                           "device = auto\n", "threshold = 0\n"})
    EXPECT_NE(ini.find(line), std::string::npos) << line << " not in:\n" << ini;
  // Without input.ms the file still reads back (print-config as a template).
  EXPECT_EQ(to_ini(Config{}).find("\nms ="), std::string::npos);
}

TEST(Config, HelpTextListsEveryKey) {
  const std::string help = help_text();
  for (const std::string& key : all_keys) {
    const auto at = help.find("  " + key + " ");
    ASSERT_NE(at, std::string::npos) << key;
    EXPECT_EQ(help.find("  " + key + " ", at + 1), std::string::npos) << key << " twice";
  }
  for (const char* option : {"--config", "--help", "--print-config", "--version"})
    EXPECT_NE(help.find(option), std::string::npos) << option;
  for (const char* section : {"[input]", "[image]", "[clean]", "[faraday]", "[output]",
                              "[parallel]"})
    EXPECT_NE(help.find(section), std::string::npos) << section;
  // One line per key with its type, default and unit.
  std::istringstream lines(help);
  std::string line;
  bool found = false;
  while (std::getline(lines, line)) {
    if (line.find("  image.scale ") != 0) continue;
    found = true;
    EXPECT_NE(line.find("number"), std::string::npos) << line;
    EXPECT_NE(line.find(" 20 "), std::string::npos) << line;
    EXPECT_NE(line.find("arcsec"), std::string::npos) << line;
  }
  EXPECT_TRUE(found);
}

TEST(Config, EveryKeyIsAcceptedAndPrinted) {
  // all_keys is the issue's list: each is known to the parser and to to_ini.
  const std::string ini = to_ini(parse({"--input.ms", "a.ms"}).config);
  for (const std::string& key : all_keys) {
    const std::string member = key.substr(key.find('.') + 1);
    EXPECT_NE(ini.find("\n" + member + " = "), std::string::npos) << key;
  }
}

TEST(Config, PixelScaleInRadians) {
  Config config;
  config.image.scale_arcsec = 3600.0;
  EXPECT_DOUBLE_EQ(config.pixel_scale_rad(), std::numbers::pi / 180.0);
  config.image.scale_arcsec = 20.0;
  EXPECT_NEAR(config.pixel_scale_rad(), 9.696273622222e-5, 1e-15);
}

TEST(Config, EnumNames) {
  EXPECT_EQ(to_string(Weighting::natural), "natural");
  EXPECT_EQ(to_string(Weighting::uniform), "uniform");
  EXPECT_EQ(to_string(Weighting::briggs), "briggs");
  EXPECT_EQ(to_string(Device::automatic), "auto");
  EXPECT_EQ(to_string(Device::cpu), "cpu");
  EXPECT_EQ(to_string(Device::gpu), "gpu");
}

TEST(Config, DemoConfigParses) {
  const std::string path = std::string(SPIP_TEST_DATA) + "/../configs/demo.cfg";
  const Config c = parse({"--config", path}).config;
  EXPECT_EQ(c.input.ms, (std::vector<std::string>{"data/oskar_small.ms"}));
  EXPECT_EQ(c.image.size, 512);
  EXPECT_EQ(c.faraday.phi_max, 60.0);
  EXPECT_EQ(c.faraday.dphi, 0.5);
  EXPECT_EQ(c.clean.niter, 5000);
  EXPECT_EQ(c.output.dir, "out/demo");
}

}  // namespace

TEST(Config, AnImageBeyondTheHorizonIsRefused) {
  // 16 pixels of 25781" span 2 rad: the edges sit on the horizon, and a hair more passes it.
  const Config whole_sky = parse({"--input.ms", "a.ms", "--image.size", "16", "--image.scale", "25783"}).config;
  EXPECT_EQ(whole_sky.image.scale_arcsec, 25783.0);
  expect_config_error([] { parse({"--input.ms", "a.ms", "--image.size", "16", "--image.scale", "25785"}); },
                      {"image.size = 16 and image.scale = 25785 arcsec put the image's edges at l = 1.0000", "beyond the horizon"});
}

TEST(Config, AutoMaskNeedsAShallowerAutoThresholdBelowIt) {
  expect_config_error([] { parse({"--input.ms", "a.ms", "--clean.auto_mask", "5"}); },
                      {"clean.auto_mask = 5", "clean.auto_threshold is 0"});
  expect_config_error([] { parse({"--input.ms", "a.ms", "--clean.auto_mask", "3", "--clean.auto_threshold", "3"}); },
                      {"clean.auto_mask = 3", "clean.auto_threshold is 3"});
  const Config c = parse({"--input.ms", "a.ms", "--clean.auto_mask", "5", "--clean.auto_threshold", "1"}).config;
  EXPECT_EQ(c.clean.auto_mask, 5.0);
  EXPECT_EQ(c.clean.auto_threshold, 1.0);
}

}  // namespace spip
