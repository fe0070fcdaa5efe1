// The planes a rank keeps of its channels: in memory or in parallel.scratch, the same
// values back, NaN for a channel never kept, and nothing left in the scratch folder.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "scratch.hpp"
#include "spip/error.hpp"
#include "spip/stages/plane_store.hpp"

namespace fs = std::filesystem;
using spip::pipeline::PlaneStore;

namespace {

constexpr int channels = 3, slots = 8;
constexpr std::size_t pixels = 48 * 48;

std::vector<float> plane(int channel, int slot) {
  std::mt19937 random(static_cast<unsigned>(100 * channel + slot));
  std::normal_distribution<float> noise;
  std::vector<float> values(pixels);
  for (float& v : values) v = noise(random);
  return values;
}

// Channels 0 and 2 kept whole; channel 1 is a blanked channel, never kept.
void fill(PlaneStore& store) {
  for (int c : {0, 2})
    for (int s = 0; s < slots; ++s) store.put(c, s, plane(c, s).data());
}

}  // namespace

TEST(PlaneStore, MemoryAndScratchGiveBackWhatWasKept) {
  const fs::path folder = spip::test::scratch_path("kept");
  PlaneStore memory(channels, slots, pixels, "");
  PlaneStore spilled(channels, slots, pixels, folder.string());
  EXPECT_FALSE(memory.spilled());
  EXPECT_TRUE(spilled.spilled());
  EXPECT_TRUE(fs::is_empty(folder)) << "the scratch file is unnamed while in use";
  fill(memory);
  fill(spilled);
  const std::size_t first = 5 * 48, count = 7 * 48;  // rows [5, 12)
  std::vector<float> a(count), b(count);
  for (int c = 0; c < channels; ++c)
    for (int s = 0; s < slots; ++s) {
      memory.read(c, s, first, count, a.data());
      spilled.read(c, s, first, count, b.data());
      if (c == 1) {
        for (std::size_t i = 0; i < count; ++i) ASSERT_TRUE(std::isnan(a[i]) && std::isnan(b[i])) << s << " " << i;
        continue;
      }
      const std::vector<float> truth = plane(c, s);
      ASSERT_EQ(a, std::vector<float>(truth.begin() + first, truth.begin() + first + count)) << c << " " << s;
      ASSERT_EQ(b, a) << c << " " << s;
    }
  // Only what came from the file counts, and a blanked channel's NaN costs no read.
  EXPECT_EQ(memory.scratch_bytes_read(), 0.0);
  EXPECT_EQ(spilled.scratch_bytes_read(), 2.0 * slots * count * sizeof(float));
  EXPECT_EQ(PlaneStore::bytes(channels, slots, pixels), 4.0 * channels * slots * pixels);
}

TEST(PlaneStore, AScratchFolderThatCannotBeMadeIsAnInputErrorNamingIt) {
  const fs::path file = spip::test::scratch_path("not-a-folder");
  std::ofstream(file) << "x";
  try {
    PlaneStore store(channels, slots, pixels, (file / "kept").string());
    FAIL() << "a scratch folder below a file was accepted";
  } catch (const spip::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("parallel.scratch " + (file / "kept").string()), std::string::npos) << e.what();
  }
}
