// The product registry: the names readers look for (RM-Tools finds an FDF cube's
// partners and its RMSF_FWHM map by name), which products the settings choose, and a
// run of the demo that writes exactly the registered files at the registered sizes.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "scratch.hpp"
#include "spip/faraday/spectrum_math.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/job/product_registry.hpp"
#include "spip/job/progress.hpp"
#include "spip/planning/planning.hpp"

namespace spip::pipeline {
namespace {

namespace fs = std::filesystem;

Config demo_names() {
  Config config;
  config.output.dir = "out";
  config.output.prefix = "demo";
  config.clean.niter = 100;
  config.faraday.fractional = true;
  return config;
}

constexpr std::array<bool, ms::num_stokes> full_stokes{true, true, true, true};

std::map<ProductKind, int> count_by_kind(const ProductRegistry& products) {
  std::map<ProductKind, int> counts;
  for (const Product& product : products.all()) ++counts[product.kind];
  return counts;
}

TEST(ProductRegistry, NamesAreTheOnesReadersLookFor) {
  const ProductRegistry products(demo_names(), {full_stokes, 40, 128, 121});
  EXPECT_EQ(products.channel_cube(ChannelCubeKind::image, ms::stokes_q), "out/demo-image-Q.fits");
  EXPECT_EQ(products.channel_cube(ChannelCubeKind::psf), "out/demo-psf.fits");
  EXPECT_EQ(products.moment(4, 0), "out/demo-moment-mean-P.fits");
  EXPECT_EQ(products.moment(0, 3), "out/demo-moment-kurt-I.fits");
  EXPECT_EQ(products.fdf_cube("real-dirty"), "out/demo-FDF_real_dirty.fits");
  EXPECT_EQ(products.fdf_cube("imag-dirty"), "out/demo-FDF_im_dirty.fits");
  EXPECT_EQ(products.fdf_cube("amp-clean"), "out/demo-FDF_clean_tot.fits");
  EXPECT_EQ(products.rmsf_fwhm_map(), "out/demo-RMSF_FWHM.fits");
  EXPECT_EQ(products.pixel_map(faraday::map_phi), "out/demo-peak-phi.fits");
  EXPECT_EQ(products.pixel_map(faraday::map_iterations), "out/demo-rmclean-iterations.fits");
  EXPECT_EQ(products.fracpol_map(), "out/demo-peak-fracpol.fits");
  EXPECT_EQ(products.catalogue_csv(), "out/demo-catalogue.csv");
  EXPECT_EQ(products.qa(), "out/demo-qa.json");
  EXPECT_EQ(products.claim(), "out/.demo.claim");
  EXPECT_EQ(products.progress_dir(), "out/.demo.progress");
}

TEST(ProductRegistry, TheSettingsAndTheDataChooseTheProducts) {
  Config config = demo_names();
  const std::map<ProductKind, int> full = count_by_kind(ProductRegistry(config, {full_stokes, 40, 128, 121}));
  // dirty, model, residual, restored of I, Q, U, V and the PSF; 5 quantities x 4 moments;
  // 9 maps of the peak fit and RM-CLEAN, three of sigma_add, peak-fracpol and the Stokes I
  // spectral index; the RMSF cube,
  // text, FWHM map; the catalogue and the RMTable, each as FITS and CSV.
  EXPECT_EQ(full, (std::map<ProductKind, int>{{ProductKind::channel_cube, 17},
                                               {ProductKind::moment_image, 20},
                                               {ProductKind::fdf_cube, 6},
                                               {ProductKind::pixel_map, 14},
                                               {ProductKind::rmsf, 3},
                                               {ProductKind::catalogue, 4},
                                               {ProductKind::record, 2}}));

  config.clean.niter = 0;  // no model or residual cubes
  config.faraday.fractional = false;
  config.catalogue.threshold = 0;
  config.faraday.cubes = {"amp-clean"};
  EXPECT_EQ(count_by_kind(ProductRegistry(config, {full_stokes, 40, 128, 121})),
            (std::map<ProductKind, int>{{ProductKind::channel_cube, 9},
                                        {ProductKind::moment_image, 20},
                                        {ProductKind::fdf_cube, 1},
                                        {ProductKind::pixel_map, 12},
                                        {ProductKind::rmsf, 3},
                                        {ProductKind::record, 2}}));
  // One channel: moments, but no RM synthesis.
  EXPECT_EQ(count_by_kind(ProductRegistry(config, {full_stokes, 1, 128, 0})),
            (std::map<ProductKind, int>{
                {ProductKind::channel_cube, 9}, {ProductKind::moment_image, 20}, {ProductKind::record, 2}}));
  // Parallel hands only: Stokes I and Q cubes, nothing of the Faraday stage.
  EXPECT_EQ(count_by_kind(ProductRegistry(config, {{true, true, false, false}, 40, 128, 0})),
            (std::map<ProductKind, int>{{ProductKind::channel_cube, 5}, {ProductKind::record, 2}}));
}

// output.channel_cubes picks cubes among those the run makes; resume can read a channel's
// planes back only where every determined Stokes parameter's cube is written.
TEST(ProductRegistry, OutputChannelCubesChoosesAmongTheCubesTheRunMakes) {
  Config config = demo_names();
  config.output.channel_cubes = {"residual-Q", "residual-U", "image-I", "image-Q", "image-U", "image-V", "psf"};
  const ProductRegistry chosen(config, {full_stokes, 40, 128, 121});
  std::vector<std::string> paths;
  for (const ChannelCube& cube : chosen.channel_cubes()) paths.push_back(cube.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"out/demo-residual-Q.fits", "out/demo-residual-U.fits",
                                             "out/demo-image-I.fits", "out/demo-image-Q.fits", "out/demo-image-U.fits",
                                             "out/demo-image-V.fits", "out/demo-psf.fits"}));
  EXPECT_TRUE(chosen.on_disk(ChannelCubeKind::image));
  EXPECT_FALSE(chosen.on_disk(ChannelCubeKind::residual)) << "residual I and V are not written";
  EXPECT_TRUE(chosen.made(ChannelCubeKind::residual));
  // Where the correlations do not determine V, the image cubes of I, Q, U are all there are.
  config.output.channel_cubes = {"image-I", "image-Q", "image-U"};
  EXPECT_TRUE(ProductRegistry(config, {{true, true, true, false}, 40, 128, 121}).on_disk(ChannelCubeKind::image));
  // Without CLEAN a chosen residual is not made, so not written.
  config.clean.niter = 0;
  config.output.channel_cubes = {"residual-Q"};
  EXPECT_TRUE(ProductRegistry(config, {full_stokes, 40, 128, 121}).channel_cubes().empty());
  config.output.channel_cubes.clear();
  EXPECT_EQ(count_by_kind(ProductRegistry(config, {full_stokes, 40, 128, 121})).count(ProductKind::channel_cube), 0u);
}

TEST(ProductRegistry, SizesAreThoseOfTheFitsFiles) {
  const ProductRegistry products(demo_names(), {full_stokes, 40, 128, 121});
  for (const Product& product : products.all()) {
    if (product.kind == ProductKind::channel_cube && product.path != products.channel_cube(ChannelCubeKind::psf)) {
      EXPECT_DOUBLE_EQ(product.bytes, fits_bytes(128.0 * 128 * 40));
    } else if (product.kind == ProductKind::fdf_cube) {
      EXPECT_DOUBLE_EQ(product.bytes, fits_bytes(128.0 * 128 * 121));
    } else if (product.kind == ProductKind::moment_image || product.kind == ProductKind::pixel_map) {
      EXPECT_DOUBLE_EQ(product.bytes, fits_bytes(128.0 * 128));
    }
  }
}

// Partial channel cubes that a resumed run finds hold the planes written into them, and
// no more: they are created at full length but sparse, so their length does not count.
TEST(ProductRegistry, BytesToWriteLeaveOutWhatPartialCubesHold) {
  Config config = demo_names();
  config.output.dir = spip::test::scratch_path("out").string();
  const ProductRegistry products(config, {full_stokes, 40, 128, 121});
  const double before = products.bytes_to_write();
  fs::create_directories(config.output.dir);
  const std::string sparse = products.channel_cube(ChannelCubeKind::image, ms::stokes_q) + ".partial";
  std::ofstream(sparse).close();
  fs::resize_file(sparse, 1 << 20);
  EXPECT_NEAR(products.bytes_to_write(), before, 65536.0);

  const std::string written = products.channel_cube(ChannelCubeKind::image, ms::stokes_u) + ".partial";
  const std::string planes(1 << 20, 'x');
  std::ofstream(written, std::ios::binary).write(planes.data(), static_cast<std::streamsize>(planes.size()));
  const double saved = before - products.bytes_to_write();
  EXPECT_GE(saved, 1 << 20);
  EXPECT_LT(saved, (1 << 20) + 65536.0);
}

// The demo's configuration at 128^2 on one rank: every file it leaves is registered,
// every registered file is there, and each FITS product's size is the registered one
// give or take its header (a few 2880-byte records); the records and the catalogue are
// no larger than registered.
// The registry's files, and no others, at the registry's sizes; and from a run that
// writes no channel cube, the same Faraday products, bit for bit.
std::set<std::string> expect_registered_products(const std::string& name, const std::vector<std::string>& extra) {
  const fs::path out = spip::test::scratch_path(name);
  std::vector<std::string> args{"spip",           "--config",           SPIP_DEMO_CONFIG,
                                "--output.dir",   out.string(),         "--image.size",
                                "128",            "--image.scale",      "40",
                                "--faraday.dphi", "1",                  "--parallel.threads",
                                "1",              "--input.ms",         std::string(SPIP_TEST_DATA) + "/oskar_small.ms"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  const Config config = parse_command_line(static_cast<int>(argv.size()), argv.data()).config;
  const Plan plan = open_plan(config);

  // Under mpiexec, which waits for its helpers: a singleton's may outlive the test.
  std::string command = "TMPDIR=" + spip::test::scratch_dir().string() + " " + SPIP_MPIEXEC + " 1 " + SPIP_BIN;
  for (std::size_t k = 1; k < args.size(); ++k) command += " " + args[k];
  EXPECT_EQ(std::system((command + " > " + (out.string() + ".log") + " 2>&1").c_str()), 0)
      << "see " << out.string() << ".log";

  std::set<std::string> written, registered;
  for (const auto& entry : fs::directory_iterator(out)) written.insert(entry.path().filename().string());
  for (const Product& product : plan.products.all()) {
    registered.insert(fs::path(product.path).filename().string());
    if (!fs::exists(product.path)) continue;
    const double bytes = static_cast<double>(fs::file_size(product.path));
    if (product.path.ends_with(".fits") && product.kind != ProductKind::catalogue)
      EXPECT_NEAR(bytes, product.bytes, 4 * 2880.0) << product.path;
    else
      EXPECT_LE(bytes, product.bytes) << product.path;
  }
  EXPECT_EQ(written, registered);
  return written;
}

TEST(ProductRegistry, ARunWritesExactlyTheRegisteredProducts) {
  const std::set<std::string> all = expect_registered_products("all", {});
  const std::set<std::string> none = expect_registered_products("none", {"--output.channel_cubes", "none"});
  EXPECT_EQ(all.size() - none.size(), 17u);
  int compared = 0;
  for (const std::string& name : none) {
    if (!name.ends_with(".fits")) continue;
    const auto a = fits::read_image((spip::test::scratch_path("all") / name).string());
    const auto b = fits::read_image((spip::test::scratch_path("none") / name).string());
    ASSERT_EQ(a.data.size(), b.data.size()) << name;
    EXPECT_EQ(0, std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float))) << name;
    ++compared;
  }
  EXPECT_EQ(compared, 20 + 6 + 14 + 2 + 2);  // moments, FDF cubes, pixel maps, RMSF cube and FWHM map, catalogues
}

// A killed run resumes only where its channels would come out as before: the same
// settings, the same inputs, the same files that shape every channel beside them (an
// ionosphere table, a beam cube) and the same group size and backend that planning chose.
TEST(ChannelProgress, ResumesOnlyWithTheSameInputsFilesAndPlan) {
  const fs::path dir = spip::test::scratch_path("progress"), ms = spip::test::scratch_path("set.ms"),
                 table = spip::test::scratch_path("ionosphere.txt");
  fs::copy(std::string(SPIP_TEST_DATA) + "/oskar_small.ms", ms, fs::copy_options::recursive);
  std::ofstream(table) << "0 1.0\n100 1.5\n";
  const std::string settings = "[clean]\nniter = 5\n\n[plan]\nranks_per_channel = 1\nbackend = cpu\n";
  const auto fingerprint = [&] { return input_fingerprint({ms.string()}, {10}, {table.string()}); };
  ChannelProgress(dir.string(), settings, fingerprint(), 0).start_fresh();
  EXPECT_TRUE(ChannelProgress(dir.string(), settings, fingerprint(), 0).decide({}).resume);
  std::string regrouped = settings;
  regrouped.replace(regrouped.find("= 1"), 3, "= 2");
  const ResumeDecision grouped = ChannelProgress(dir.string(), regrouped, fingerprint(), 0).decide({});
  EXPECT_FALSE(grouped.resume);
  EXPECT_NE(grouped.reason.find("plan.ranks_per_channel 1 -> 2"), std::string::npos) << grouped.reason;
  // Moved, as a job staging its data to a node's disk does (the files keep their sizes
  // and times): the same input, and the decision says where it was.
  const fs::path moved = spip::test::scratch_path("staged.ms");
  fs::rename(ms, moved);
  const ResumeDecision staged =
      ChannelProgress(dir.string(), settings, input_fingerprint({moved.string()}, {10}, {table.string()}), 0).decide({});
  EXPECT_TRUE(staged.resume) << staged.reason;
  EXPECT_NE(staged.reason.find("inputs found elsewhere: " + fs::canonical(moved).string() + " (was "),
            std::string::npos)
      << staged.reason;
  fs::rename(moved, ms);
  // Another row count, or a file changed, is another input.
  EXPECT_FALSE(ChannelProgress(dir.string(), settings, input_fingerprint({ms.string()}, {11}, {table.string()}), 0)
                   .decide({})
                   .resume);
  std::ofstream(table) << "0 1.0\n100 2.5\n200 3.0\n";  // regenerated under the same name
  const ResumeDecision redone = ChannelProgress(dir.string(), settings, fingerprint(), 0).decide({});
  EXPECT_FALSE(redone.resume);
  EXPECT_NE(redone.reason.find("ionosphere.txt changed"), std::string::npos) << redone.reason;
}

// The markers of every rank's journal count, whichever rank reads them (a run may resume
// with other ranks), as written to the last bit; a line a kill cut short does not, and
// a fresh start forgets them all.
TEST(ChannelProgress, ReadsEveryRanksJournalButNoLineCutShort) {
  const std::string dir = spip::test::scratch_path("progress").string(), settings = "[clean]\nniter = 5\n";
  const double peak = 0.1 + 0.2;  // 0.30000000000000004
  {
    const ChannelProgress zero(dir, settings, "inputs", 0);
    zero.start_fresh();
    zero.mark_done(3, R"({"noise": 1.5e-3, "beam": null})");
    zero.mark_restored(3, peak);
    const ChannelProgress one(dir, settings, "", 1);
    one.mark_done(7, R"({"noise": 2.5e-3})");
    one.mark_restored(7, std::numeric_limits<double>::quiet_NaN());
  }
  std::ofstream(fs::path(dir) / "rank-000001.jsonl", std::ios::app) << R"({"channel": 8, "record": {"noise": 1)";
  const ChannelProgress reader(dir, settings, "inputs", 2);
  const ResumeDecision decision = reader.decide({});
  EXPECT_TRUE(decision.resume) << decision.reason;
  EXPECT_EQ(decision.channels_done, 2);
  EXPECT_TRUE(reader.done(3));
  EXPECT_TRUE(reader.done(7));
  EXPECT_FALSE(reader.done(8));
  // Rank 1 of a resumed run ends the cut line before its own, which is then read whole.
  ChannelProgress(dir, settings, "", 1).mark_done(9, R"({"noise": 3.5e-3})");
  const ChannelProgress other(dir, settings, "inputs", 0);
  other.adopt(ChannelProgress(dir, settings, "inputs", 2).journals());  // reader's were read before line 9
  EXPECT_TRUE(other.done(9));
  EXPECT_FALSE(other.done(8));
  EXPECT_EQ(other.record(7), R"({"noise":0.0025})");
  EXPECT_EQ(reader.record(3), R"({"noise":0.0015,"beam":null})");
  EXPECT_EQ(reader.restored_peak(3), peak);
  EXPECT_TRUE(std::isnan(reader.restored_peak(7)));
  EXPECT_FALSE(reader.restored(8));
  reader.start_fresh();
  EXPECT_FALSE(reader.done(3));
  EXPECT_EQ(ChannelProgress(dir, settings, "inputs", 0).decide({}).channels_done, 0);
}

}  // namespace
}  // namespace spip::pipeline
