// The one major-cycle driver (deconv::clean_channel) over the CPU backend, with a spy
// that records what the driver asked of it: every reason CLEAN stops for, and the two
// stages of clean.auto_mask. The visibilities are predicted from known point sources on
// a random uv coverage, with noise where the noise-based thresholds need it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "spip/deconv/major_cycle.hpp"
#include "spip/imaging/channel_imager.hpp"

using namespace spip;

namespace {

constexpr int n = 128;
const imaging::ImageGeometry geometry = imaging::ImageGeometry::make(n, 30.0 / 206264.806, 1.2);

// The CPU backend, with a record of the calls.
class Spy final : public deconv::CleanBackend {
 public:
  Spy(const imaging::ChannelImager& imager, const std::vector<std::complex<float>>& vis) : host_(imager, vis) {}
  std::vector<float> invert() override { return host_.invert(); }
  double peak(PeakSearch search) override { return host_.peak(search); }
  double noise(PeakSearch search) override { return host_.noise(search); }
  std::unique_ptr<deconv::MinorAlgorithm> hogbom() override { return watched("hogbom", host_.hogbom()); }
  std::unique_ptr<deconv::MinorAlgorithm> subminor() override { return watched("subminor", host_.subminor()); }
  std::unique_ptr<deconv::MinorAlgorithm> multiscale(const deconv::MultiscaleSetup& setup) override {
    return watched("multiscale", host_.multiscale(setup));
  }
  void make_whole_image_psf() override {
    ++whole_psfs;
    host_.make_whole_image_psf();
  }
  const imaging::RowGroup* group() const override { return nullptr; }
  void model_from_leader() override { ADD_FAILURE() << "no group: nothing to take from a leader"; }
  void keep_model() override { host_.keep_model(); }
  void restore_kept_model() override {
    ++restorations;
    host_.restore_kept_model();
  }
  void subtract_model() override {
    ++subtractions;
    host_.subtract_model();
  }
  void mask_model_pixels() override {
    host_.mask_model_pixels();
    mask_after_cycle = static_cast<int>(steps.size());
  }
  void fetch(deconv::ChannelImages& out) override { host_.fetch(out); }

  std::vector<std::string> algorithms;  // made, in order
  std::vector<deconv::MinorCycleStep> steps;
  int whole_psfs = 0;
  int subtractions = 0;
  int restorations = 0;
  int runaway_cycle = 0;       // the minor cycle (from 1) made to run away; 0: none
  bool watch_runaway = true;   // whether that cycle watches its own peak
  int cut_short_cycle = 0;     // the minor cycle (from 1) stopped after a few iterations as if it diverged
  int mask_after_cycle = -1;  // how many minor cycles ran before the mask was made

 private:
  // The host's algorithm, with its steps recorded and the chosen cycle made to run away.
  class Watched final : public deconv::MinorAlgorithm {
   public:
    Watched(Spy& spy, std::unique_ptr<deconv::MinorAlgorithm> algorithm) : spy_(spy), algorithm_(std::move(algorithm)) {}
    deconv::MinorCycleResult run(const deconv::MinorCycleStep& step) override {
      spy_.steps.push_back(step);
      if (static_cast<int>(spy_.steps.size()) == spy_.cut_short_cycle) {
        deconv::MinorCycleStep few = step;
        few.max_iterations = 3;
        deconv::MinorCycleResult result = algorithm_->run(few);
        result.diverged = true;
        return result;
      }
      if (static_cast<int>(spy_.steps.size()) != spy_.runaway_cycle) return algorithm_->run(step);
      // A loop gain above 2 overshoots every component: Hogbom runs away for real.
      deconv::MinorCycleStep runaway = step;
      runaway.gain = 2.5;
      runaway.max_iterations = 200;
      if (!spy_.watch_runaway) runaway.divergence_level = 0;
      return algorithm_->run(runaway);
    }
    const deconv::MultiscaleClean* multiscale() const override { return algorithm_->multiscale(); }

   private:
    Spy& spy_;
    std::unique_ptr<deconv::MinorAlgorithm> algorithm_;
  };
  std::unique_ptr<deconv::MinorAlgorithm> watched(const char* name, std::unique_ptr<deconv::MinorAlgorithm> made) {
    algorithms.push_back(name);
    return std::make_unique<Watched>(*this, std::move(made));
  }

  deconv::HostCleanBackend host_;
};

// Two point sources (I, and a polarised one in Q and U) and Gaussian noise of `sigma`
// Jy per visibility, on 3000 random baselines within 2 km at 150 MHz.
struct Channel {
  imaging::ChannelImager imager{geometry, 1e-5, false};
  std::vector<std::complex<float>> vis;
  explicit Channel(double sigma) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    std::normal_distribution<float> noise(0.0f, static_cast<float>(sigma));
    const std::size_t rows = 3000;
    std::vector<double> uvw;
    while (uvw.size() < 3 * rows) {
      const double u = uniform(rng), v = uniform(rng);
      if (u * u + v * v > 1) continue;
      uvw.insert(uvw.end(), {u * 1000.0, v * 1000.0, 0.0});  // wavelengths
    }
    imager.set_data(uvw, std::vector<float>(4 * rows, 1.0f));
    std::vector<float> model(4 * geometry.pixels(), 0.0f);
    model[40 * n + 50] = 2.0f;                                  // I
    model[geometry.pixels() + 80 * n + 70] = 0.6f;              // Q
    model[2 * geometry.pixels() + 80 * n + 70] = -0.4f;         // U
    vis.resize(4 * rows);
    imager.predict(model.data(), vis.data());
    if (sigma > 0)
      for (auto& v : vis) v += std::complex<float>(noise(rng), noise(rng));
  }
};

// The driver over a new spy, which the test then reads.
struct Run {
  std::unique_ptr<Spy> spy;
  deconv::ChannelImages images;
};
Run clean(Channel& channel, const CleanConfig& config, int runaway_cycle = 0, bool watch_runaway = true) {
  auto spy = std::make_unique<Spy>(channel.imager, channel.vis);
  spy->runaway_cycle = runaway_cycle;
  spy->watch_runaway = watch_runaway;
  deconv::ChannelImages images = deconv::clean_channel(*spy, config, geometry, 0.0);
  return {std::move(spy), std::move(images)};
}

std::set<std::size_t> model_pixels(const deconv::ChannelImages& images) {
  std::set<std::size_t> pixels;
  for (std::size_t k = 0; k < images.model.size(); ++k)
    if (images.model[k] != 0) pixels.insert(k % geometry.pixels());
  return pixels;
}

CleanConfig deep(double threshold) {
  CleanConfig config;
  config.niter = 100000;
  config.threshold_jy = threshold;
  config.max_major = 50;
  return config;
}

}  // namespace

TEST(MajorCycle, WithoutIterationsGivesTheDirtyImagesOnly) {
  Channel channel(0.0);
  const auto [spy, images] = clean(channel, CleanConfig{});
  EXPECT_TRUE(spy->steps.empty());
  EXPECT_TRUE(spy->algorithms.empty());
  EXPECT_EQ(spy->subtractions, 0);
  EXPECT_EQ(images.residual, images.dirty);
  EXPECT_TRUE(std::all_of(images.model.begin(), images.model.end(), [](float v) { return v == 0; }));
  EXPECT_NEAR(*std::max_element(images.dirty.begin(), images.dirty.begin() + geometry.pixels()), 2.0, 0.01);
}

// The usual end: a cycle that cleans down to the threshold itself is the last; its
// residual is imaged once more, and the threshold counts as reached.
TEST(MajorCycle, StopsAfterTheCycleThatReachesTheThreshold) {
  Channel channel(0.0);
  const auto [spy, images] = clean(channel, deep(0.01));
  ASSERT_FALSE(spy->steps.empty());
  EXPECT_TRUE(images.threshold_reached);
  EXPECT_EQ(images.major_cycles, static_cast<int>(spy->steps.size()));
  EXPECT_EQ(spy->subtractions, images.major_cycles) << "each cycle's residual is imaged again";
  EXPECT_DOUBLE_EQ(spy->steps.back().stop_level, 0.01) << "the last cycle cleans to the threshold";
  for (std::size_t k = 0; k + 1 < spy->steps.size(); ++k)
    EXPECT_GT(spy->steps[k].stop_level, 0.01) << "earlier cycles stop at (1 - mgain) of their peak";
  EXPECT_DOUBLE_EQ(images.clean_threshold, 0.01);
  double model_i = 0;
  for (std::size_t p = 0; p < geometry.pixels(); ++p) model_i += images.model[p];
  EXPECT_NEAR(model_i, 2.0, 0.02);
  EXPECT_EQ(spy->algorithms, std::vector<std::string>{"subminor"}) << "chosen once, for every cycle";
  EXPECT_EQ(spy->whole_psfs, 0) << "a compact PSF: the image-sized one is subtracted";
}

// A second cycle that runs away, stopped early in its minor cycles or only found in the
// residual imaged after them: CLEAN stops there, with the model and residual of the
// first cycle.
TEST(MajorCycle, TheDivergenceGuardKeepsTheModelFromBeforeTheCycleThatRanAway) {
  Channel channel(0.0);
  CleanConfig config = deep(0.001);
  config.max_major = 1;
  config.subminor = false;  // Hogbom watches its peak on every iteration
  const auto [first, one_cycle] = clean(channel, config);
  ASSERT_FALSE(one_cycle.threshold_reached);
  config.max_major = 5;
  for (const bool watched : {true, false}) {
    const auto [spy, images] = clean(channel, config, 2, watched);
    EXPECT_EQ(images.clean_stop, deconv::CleanStop::diverged) << watched;
    EXPECT_FALSE(images.threshold_reached);
    EXPECT_GT(images.diverged_peak, spy->steps[1].divergence_level);
    EXPECT_EQ(spy->steps.size(), 2u) << "no cycle after the one that ran away";
    EXPECT_EQ(spy->restorations, 1);
    EXPECT_EQ(spy->subtractions, 3) << "the cycle's exact residual decides, then the kept model's is made";
    EXPECT_EQ(images.model, one_cycle.model) << watched;
    EXPECT_EQ(images.residual, one_cycle.residual) << watched;
  }
}

// Minor cycles stopped early by the divergence watch, whose exact residual nonetheless
// came down, have not reached the floor, even in a cycle meant to be the last (here the
// first: 2 Jy down to a threshold above (1 - mgain) of it): CLEAN goes on from that
// residual to the threshold, as Radler decides from the peak actually left.
TEST(MajorCycle, ACycleCutShortIsNotTheLastThoughItWasMeantToBe) {
  Channel channel(0.0);
  const CleanConfig config = deep(0.5);
  auto spy = std::make_unique<Spy>(channel.imager, channel.vis);
  spy->cut_short_cycle = 1;
  const deconv::ChannelImages images = deconv::clean_channel(*spy, config, geometry, 0.0);
  EXPECT_EQ(images.clean_stop, deconv::CleanStop::threshold);
  EXPECT_TRUE(images.threshold_reached);
  ASSERT_GE(spy->steps.size(), 2u) << "the cut-short cycle is followed by another";
  EXPECT_DOUBLE_EQ(spy->steps[0].stop_level, 0.5) << "the first was meant to be the last";
  double model_i = 0;
  for (std::size_t p = 0; p < geometry.pixels(); ++p) model_i += images.model[p];
  EXPECT_GT(model_i, 1.5) << "cleaned to 0.5 Jy, not left after the 3 iterations of the cut-short cycle";
}

// A runaway within the sub-minor loop's pass or within multiscale's loop is stopped at
// the divergence level, not after every iteration the cycle may take: watched, it takes
// far fewer than unwatched, and the model is that of before the cycle either way.
TEST(MajorCycle, TheSubminorAndMultiscaleLoopsStopARunawayAtTheDivergenceLevel) {
  Channel channel(0.0);
  for (const bool multiscale : {false, true}) {
    CleanConfig config = deep(0.001);
    config.max_major = 5;
    config.subminor = true;
    config.multiscale = multiscale;
    const auto [watched_spy, watched] = clean(channel, config, 2, true);
    const auto [unwatched_spy, unwatched] = clean(channel, config, 2, false);
    EXPECT_EQ(watched.clean_stop, deconv::CleanStop::diverged) << multiscale;
    EXPECT_EQ(unwatched.clean_stop, deconv::CleanStop::diverged) << multiscale;
    EXPECT_LT(watched.iterations, unwatched.iterations - 100) << multiscale;
    EXPECT_EQ(watched.model, unwatched.model) << multiscale;
  }
}

TEST(MajorCycle, StopsAtTheIterationLimitWithoutReachingTheThreshold) {
  Channel channel(0.0);
  CleanConfig config = deep(0.001);
  config.niter = 7;
  const auto [spy, images] = clean(channel, config);
  EXPECT_EQ(images.iterations, 7);
  EXPECT_FALSE(images.threshold_reached);
}

TEST(MajorCycle, StopsAtTheMajorCycleLimitWithoutReachingTheThreshold) {
  Channel channel(0.0);
  CleanConfig config = deep(0.001);
  config.max_major = 2;
  config.subminor = false;
  const auto [spy, images] = clean(channel, config);
  EXPECT_EQ(images.major_cycles, 2);
  EXPECT_EQ(spy->steps.size(), 2u);
  EXPECT_EQ(spy->algorithms, std::vector<std::string>{"hogbom"});
  EXPECT_FALSE(images.threshold_reached);
}

TEST(MajorCycle, RunsNoCycleWhenNothingIsAboveTheThreshold) {
  Channel channel(0.0);
  const auto [spy, images] = clean(channel, deep(5.0));
  EXPECT_TRUE(spy->steps.empty());
  EXPECT_EQ(images.major_cycles, 0);
  EXPECT_TRUE(images.threshold_reached);
}

// mgain = 0 puts each cycle's stop at its starting peak: the minor cycles find nothing,
// and CLEAN stops after that cycle instead of looping.
TEST(MajorCycle, StopsWhenACycleFindsNothing) {
  Channel channel(0.0);
  CleanConfig config = deep(0.001);
  config.mgain = 0.0;
  const auto [spy, images] = clean(channel, config);
  EXPECT_EQ(images.major_cycles, 1);
  EXPECT_EQ(images.iterations, 0);
  EXPECT_FALSE(images.threshold_reached);
}

TEST(MajorCycle, AutoThresholdFollowsTheNoiseOfEachResidual) {
  Channel channel(1.0);
  CleanConfig config = deep(0.0);
  config.auto_threshold = 5;
  const auto [spy, images] = clean(channel, config);
  EXPECT_TRUE(images.threshold_reached);
  EXPECT_GT(images.search_noise, 0);
  EXPECT_NEAR(images.clean_threshold, 5 * images.search_noise, 1e-12);
}

// clean.auto_mask: the first stage cleans everywhere to auto_mask sigma; the pixels
// that then hold components are the mask, and the second stage goes deeper only there.
TEST(MajorCycle, AutoMaskCleansDeeperOnlyWhereTheFirstStageFoundComponents) {
  Channel channel(1.0);
  CleanConfig first = deep(0.0);
  first.auto_threshold = 6;  // the first stage alone
  const std::set<std::size_t> found = model_pixels(clean(channel, first).images);
  ASSERT_FALSE(found.empty());

  CleanConfig masked = deep(0.0);
  masked.auto_mask = 6;
  masked.auto_threshold = 1;
  const auto [spy, images] = clean(channel, masked);
  ASSERT_GE(spy->mask_after_cycle, 1) << "the mask is made from the first stage's components";
  EXPECT_GT(static_cast<int>(spy->steps.size()), spy->mask_after_cycle) << "and cleaned in";
  EXPECT_EQ(model_pixels(images), found) << "the second stage adds components only inside the mask";
  EXPECT_NEAR(images.clean_threshold, images.search_noise, 1e-12) << "down to auto_threshold sigma";
  EXPECT_TRUE(images.threshold_reached);

  CleanConfig unmasked = deep(0.0);
  unmasked.auto_threshold = 1;
  EXPECT_GT(model_pixels(clean(channel, unmasked).images).size(), 2 * found.size())
      << "without the mask, the same depth takes components from the noise";
}

// Nothing above auto_mask sigma: the first stage takes no component, so the mask would
// be empty and the second stage could clean nothing, though the peak is far above
// auto_threshold sigma. CLEAN stops for want of components, not at its threshold.
TEST(MajorCycle, AutoMaskWithNothingAboveItsLevelFindsNoComponents) {
  Channel channel(1.0);
  CleanConfig config = deep(0.0);
  config.auto_mask = 1e6;
  config.auto_threshold = 1;
  const auto [spy, images] = clean(channel, config);
  EXPECT_TRUE(spy->steps.empty());
  EXPECT_EQ(images.iterations, 0);
  EXPECT_EQ(images.clean_stop, deconv::CleanStop::no_components);
  EXPECT_FALSE(images.threshold_reached);
}

// Noise-free data cleaned with no threshold: CLEAN stops at 1e-6 of the first peak, not
// at float rounding (1e-8 of it here), where the peaks of the residual wander and grow
// from cycle to cycle and the divergence guard took the channel for diverged (the
// sample's channel 5 at 4e-7 Jy beside its 2.19 Jy; here at 8e-8 Jy).
TEST(MajorCycle, NoiseFreeDataCleanedWithoutAThresholdDoesNotDiverge) {
  Channel channel(0.0);
  const auto [spy, images] = clean(channel, deep(0.0));
  EXPECT_EQ(images.clean_stop, deconv::CleanStop::threshold) << "peak " << images.diverged_peak;
  EXPECT_NEAR(images.clean_threshold, 1e-6 * 2.0, 1e-6 * 0.1);
  const float residual = *std::max_element(images.residual.begin(), images.residual.begin() + geometry.pixels());
  EXPECT_LT(residual, 1.5e-6 * 2.0);
  std::printf("[ measured ] noise-free, no threshold: %d iterations, %d major cycles, residual peak %.3g Jy, stop %s\n",
              images.iterations, images.major_cycles, residual, deconv::clean_stop_name(images.clean_stop));
}
