// What a primary beam's response costs per pixel off the image's centre, where it is
// evaluated pixel by pixel (a mosaic's pointings, image.centre away from the pointing):
// beam::response_rows for the Gaussian and the Airy pattern over a whole image, and the
// Bessel function J1 behind the Airy pattern, glibc's j1 against libstdc++'s
// std::cyl_bessel_j, over the pattern's first 20 sidelobes. Runs alternate; prints each
// one's figure and the median, and how far the two J1 lie apart. Set OMP_NUM_THREADS=1
// for a core's figures.
//   bench_beam [size] [repeats]
#include <math.h>  // j1

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "spip/beam/primary_beam.hpp"

namespace {

double seconds(const std::function<void()>& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int size = argc > 1 ? std::atoi(argv[1]) : 2048;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  using spip::beam::Model;
  const double deg = std::numbers::pi / 180;
  // A 12 m dish at 1.4 GHz, the image 0.36 deg from its pointing.
  const spip::beam::ImageGrid grid{size, 10.0 / 206264.806, {0, 60 * deg}, {0.3 * deg, 60.2 * deg}};
  const double pixels = static_cast<double>(size) * size;
  constexpr int calls = 4'000'000;
  volatile double sink = 0;
  struct Case {
    std::string name;
    double per;  // what one run's time is divided by
    std::function<void()> run;
  };
  const std::vector<Case> cases{
      {"gaussian response [ns/pixel]", pixels,
       [&] { sink = sink + spip::beam::response_rows({.model = Model::gaussian, .dish_diameter_m = 12}, grid, 1.4e9, 0, size)[1]; }},
      {"airy response [ns/pixel]", pixels,
       [&] { sink = sink + spip::beam::response_rows({.model = Model::airy, .dish_diameter_m = 12}, grid, 1.4e9, 0, size)[1]; }},
      {"glibc j1 [ns/call]", calls,
       [&] {
         double sum = 0;
         for (int i = 0; i < calls; ++i) sum += ::j1(60.0 * i / calls);
         sink = sink + sum;
       }},
      {"std::cyl_bessel_j(1, x) [ns/call]", calls,
       [&] {
         double sum = 0;
         for (int i = 0; i < calls; ++i) sum += std::cyl_bessel_j(1.0, 60.0 * i / calls);
         sink = sink + sum;
       }}};
  std::vector<std::vector<double>> figures(cases.size());
  for (int r = 0; r < repeats; ++r)
    for (std::size_t k = 0; k < cases.size(); ++k) figures[k].push_back(seconds(cases[k].run) / cases[k].per * 1e9);
  double apart = 0;
  for (int i = 0; i < calls; i += 7) apart = std::max(apart, std::abs(::j1(60.0 * i / calls) - std::cyl_bessel_j(1.0, 60.0 * i / calls)));
  std::printf("%-36s %10s   runs (%d x %d image, %d calls)\n", "what", "median", size, size, calls);
  for (std::size_t k = 0; k < cases.size(); ++k) {
    std::printf("%-36s %10.1f  ", cases[k].name.c_str(), median(figures[k]));
    for (double f : figures[k]) std::printf(" %.1f", f);
    std::printf("\n");
  }
  std::printf("j1 and std::cyl_bessel_j(1, x) over x in [0, 60]: at most %.1e apart\n", apart);
}
