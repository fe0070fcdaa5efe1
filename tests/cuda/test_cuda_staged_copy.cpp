// StagedCopy (cuda/detail/staged_copy.hpp) against the driver's own copies, at sizes on
// both sides of its buffer's two halves: the copies that fit go through the driver, the
// larger ones through the halves, with a short last piece or a whole one. Each direction
// is checked on its own, so that two mistakes cannot cancel in a round trip, and one
// byte past the end must stay as it was. One copier serves every size, as the imager's
// does, on one host thread and on OpenMP's, on the default stream and on another.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "detail/staged_copy.hpp"
#include "gpu_test_main.hpp"

namespace {

using spip::cuda::detail::DeviceArray;
using spip::cuda::detail::StagedCopy;

// Four of the host's 256 KiB stripes, so that several threads share a half.
constexpr std::size_t half_bytes = std::size_t{1} << 20;
constexpr std::uint8_t untouched = 0xab;

// Bytes that differ from their neighbours' a half away (2^20 is not a multiple of 251),
// so that a piece written to the wrong place shows.
std::vector<std::uint8_t> pattern(std::size_t bytes, unsigned seed) {
  std::vector<std::uint8_t> values(bytes);
  for (std::size_t i = 0; i < bytes; ++i) values[i] = static_cast<std::uint8_t>((i + seed) % 251);
  return values;
}

// Where `got` first differs from `want` over want's length, or "equal".
std::string first_difference(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i])
      return "byte " + std::to_string(i) + ": " + std::to_string(got[i]) + " for " + std::to_string(want[i]);
  return "equal";
}

void expect_both_directions(StagedCopy& staged, std::size_t bytes, cudaStream_t stream) {
  SCOPED_TRACE(std::to_string(bytes) + " bytes");
  DeviceArray<std::uint8_t> device(bytes + 1);
  std::vector<std::uint8_t> seen(bytes + 1);

  const std::vector<std::uint8_t> up = pattern(bytes, 1);
  ASSERT_EQ(cudaMemset(device.get(), untouched, bytes + 1), cudaSuccess);
  staged.to_device(device.get(), up.data(), bytes, stream);
  ASSERT_EQ(cudaMemcpy(seen.data(), device.get(), bytes + 1, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(first_difference(seen, up), "equal") << "up";
  EXPECT_EQ(seen[bytes], untouched) << "up: written past the end";

  const std::vector<std::uint8_t> down = pattern(bytes, 7);
  ASSERT_EQ(cudaMemcpy(device.get(), down.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  seen.assign(bytes + 1, untouched);
  staged.to_host(seen.data(), device.get(), bytes, stream);
  EXPECT_EQ(first_difference(seen, down), "equal") << "down";
  EXPECT_EQ(seen[bytes], untouched) << "down: written past the end";
}

}  // namespace

TEST(StagedCopy, EqualsTheDriversCopiesAtEverySizeAroundItsBuffer) {
  ASSERT_EQ(cudaSetDevice(spip::test::gpu_device), cudaSuccess);
  cudaStream_t other = nullptr;
  ASSERT_EQ(cudaStreamCreate(&other), cudaSuccess);
  for (const int host_threads : {1, 0}) {
    for (const cudaStream_t stream : {cudaStream_t{nullptr}, other}) {
      SCOPED_TRACE(std::string(host_threads == 1 ? "one host thread" : "OpenMP's threads") +
                   (stream ? ", own stream" : ", default stream"));
      StagedCopy staged(half_bytes, host_threads);
      for (const std::size_t bytes : {std::size_t{1}, half_bytes, 2 * half_bytes, 2 * half_bytes + 1,
                                      3 * half_bytes + half_bytes / 2 + 3, 5 * half_bytes, std::size_t{1000}})
        expect_both_directions(staged, bytes, stream);
    }
  }
  EXPECT_EQ(cudaStreamDestroy(other), cudaSuccess);
}
