// main() of the GPU tests: without a usable device they exit with 77, which CTest
// reports as skipped (SKIP_RETURN_CODE).
#include <gtest/gtest.h>

#include <cstdio>

#include "gpu_test_main.hpp"
#include "spip/cuda/device.hpp"

namespace spip::test {
int gpu_device = -1;
}

int main(int argc, char** argv) {
  const spip::cuda::DeviceProbe probe = spip::cuda::probe_devices();
  if (probe.devices.empty()) {
    std::printf("no usable GPU (%s): skipped\n", probe.reason.c_str());
    return 77;
  }
  spip::test::gpu_device = probe.devices.front().index;
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
