// The Faraday stage on another imager's cubes (input.cube_q, cube_u, cube_i) with its RM
// synthesis on the GPU, against the same run on the CPU, product by product
// (tests/common/product_compare.hpp). The cubes are the restored Q, U and I cubes of a
// CPU run of the noisy sample (backend_products.hpp: the sample's own restored cubes
// hold no noise, and their sigma_add, at a signal-to-noise of 3e8, differed by 0.75 of
// its peak, H200, 2026-11-30), so the two runs differ only in the stage's device: RM
// synthesis through cuBLAS instead of OpenBLAS, whose sums differ in their last bits.
// Without RM-CLEAN, whose choices between near-equal depths are not continuous in those
// bits (test_cuda_pipeline compares its products by the share that agrees), every
// product must agree to 1e-5 of its scale.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include "backend_products.hpp"
#include "product_compare.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;

namespace {

// spip with `arguments` and the Faraday depths the sample needs (to 60 rad/m^2, as
// configs/demo.cfg, at half its resolution), but not with that config, whose input.ms
// a run on cubes refuses.
fs::path run(const std::string& arguments, const std::string& name) {
  const fs::path out = spip::test::scratch_path(name);
  const std::string command = std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --output.dir " + out.string() +
                              " --output.prefix demo --faraday.fractional true --faraday.phi_max 60" +
                              " --faraday.dphi 1 " + arguments + " > " + out.string() + ".log 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << spip::test::file_text(out.string() + ".log");
  return out;
}

}  // namespace

TEST(CudaCubes, TheFaradayStageOnCubesMatchesTheCpuBackend) {
  const fs::path imaged = run("--input.ms " + spip::test::noisy_sample_ms() + " --image.size 128" +
                                  " --image.scale 60 --clean.niter 1000 --parallel.device cpu" +
                                  " --output.channel_cubes image --faraday.cubes none",
                              "imaged");
  const std::string cubes = "--input.cube_q " + (imaged / "demo-image-Q.fits").string() + " --input.cube_u " +
                            (imaged / "demo-image-U.fits").string() + " --input.cube_i " +
                            (imaged / "demo-image-I.fits").string() + " --faraday.rmclean_niter 0 ";
  const fs::path cpu = run(cubes + "--parallel.device cpu", "cubes_cpu");
  const fs::path gpu = run(cubes + "--parallel.device gpu", "cubes_gpu");
  for (const auto& [folder, device] : {std::pair{cpu, "cpu"}, std::pair{gpu, "gpu"}}) {
    const std::string log = spip::test::file_text(folder.string() + ".log");
    EXPECT_NE(log.find(std::string("RM synthesis and RM-CLEAN on the ") + device), std::string::npos) << log;
  }
  EXPECT_GE(spip::test::expect_equal_products(cpu, gpu, "cube run on the GPU", 1e-5), 20);
}
