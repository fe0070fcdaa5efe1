#include "spip/deconv/convolver.hpp"

#include <algorithm>
#include <cstdint>

#include "spip/imaging/fft.hpp"
#include "spip/imaging/geometry.hpp"

namespace spip::deconv {
namespace {

class FftConvolver final : public Convolver {
 public:
  FftConvolver(int n, int reach)
      : n_(n),
        m_(convolution_size(n, reach)),
        fft_(imaging::Fft2d::shared(m_)),
        spectrum_(cells()),
        work_(cells()),
        all_(imaging::Fft2d::full(m_)),
        window_{std::vector<std::uint8_t>(m_, 0), std::vector<std::uint8_t>(m_, 0)} {
    std::fill(window_.rows.begin(), window_.rows.begin() + n, 1);
    std::fill(window_.columns.begin(), window_.columns.begin() + n, 1);
  }

  int add_filter(const float* filter, int side) override {
    std::complex<float>* grid = work_.data();
    std::fill(grid, grid + cells(), std::complex<float>{});
    for (int sy = 0; sy < side; ++sy)
      for (int sx = 0; sx < side; ++sx)
        grid[filter_cell(sx, sy, side, m_, fft_.pitch())] = filter[static_cast<std::size_t>(sy) * side + sx];
    fft_.forward(grid, all_, all_);
    const float scale = 1.0f / grid_cells();
    std::vector<std::complex<float>>& transform = transforms_.emplace_back(cells());
    std::transform(grid, grid + cells(), transform.begin(), [&](std::complex<float> v) { return v * scale; });
    return static_cast<int>(transforms_.size()) - 1;
  }

  void convolve(const float* in, int planes, const std::vector<std::vector<int>>& products,
                const std::vector<float*>& out) override {
    const std::size_t pixels = static_cast<std::size_t>(n_) * n_;
    for (int re = 0; re < planes; re += 2) {
      const int im = re + 1 < planes ? re + 1 : -1;
      const bool any = transform_pair(in + re * pixels, im < 0 ? nullptr : in + im * pixels);
      for (std::size_t f = 0; f < products.size(); ++f) {
        float* out_re = out[f] + re * pixels;
        float* out_im = im < 0 ? nullptr : out[f] + im * pixels;
        if (!any) {
          std::fill(out_re, out_re + pixels, 0.0f);
          if (out_im) std::fill(out_im, out_im + pixels, 0.0f);
          continue;
        }
        filter_pair(products[f], out_re, out_im);
      }
    }
  }

 private:
  std::size_t cells() const { return fft_.cells(); }  // rows fft_.pitch() apart
  float grid_cells() const { return static_cast<float>(m_) * static_cast<float>(m_); }

  // spectrum_ = the transform of re + i im on the grid; false where both are zero. Only
  // the rows and columns that hold a non-zero pixel are transformed in the first pass:
  // a few CLEAN components cost a few lines.
  bool transform_pair(const float* re, const float* im) {
    std::complex<float>* grid = spectrum_.data();
    std::fill(grid, grid + cells(), std::complex<float>{});
    imaging::Fft2d::Support occupied{std::vector<std::uint8_t>(m_, 0), std::vector<std::uint8_t>(m_, 0)};
    bool any = false;
    for (int y = 0; y < n_; ++y)
      for (int x = 0; x < n_; ++x) {
        const std::size_t p = static_cast<std::size_t>(y) * n_ + x;
        const std::complex<float> v(re[p], im ? im[p] : 0.0f);
        if (v == std::complex<float>{}) continue;
        grid[static_cast<std::size_t>(y) * fft_.pitch() + x] = v;
        occupied.rows[y] = occupied.columns[x] = 1;
        any = true;
      }
    if (any) fft_.forward(grid, occupied, all_);
    return any;
  }

  void filter_pair(const std::vector<int>& product, float* out_re, float* out_im) {
    std::vector<const std::complex<float>*> transforms;
    for (int f : product) transforms.push_back(transforms_[f].data());
    const std::complex<float>* spectrum = spectrum_.data();
    std::complex<float>* grid = work_.data();
    const float scale = grid_cells();
#pragma omp parallel for schedule(static)
    for (std::size_t cell = 0; cell < cells(); ++cell) grid[cell] = spectrum[cell] * filter_product(transforms, cell, scale);
    fft_.backward(grid, all_, window_);
#pragma omp parallel for schedule(static)
    for (int y = 0; y < n_; ++y)
      for (int x = 0; x < n_; ++x) {
        const std::complex<float> v = grid[static_cast<std::size_t>(y) * fft_.pitch() + x];
        out_re[static_cast<std::size_t>(y) * n_ + x] = v.real();
        if (out_im) out_im[static_cast<std::size_t>(y) * n_ + x] = v.imag();
      }
  }

  int n_, m_;
  const imaging::Fft2d& fft_;
  imaging::FftBuffer spectrum_, work_;
  imaging::Fft2d::Support all_, window_;  // every line; the image's [0, N)
  std::vector<std::vector<std::complex<float>>> transforms_;  // each scaled by 1 / M^2
};

}  // namespace

int convolution_size(int n, int reach) { return imaging::good_fft_size((3 * n + 1) / 2 + reach); }

std::unique_ptr<Convolver> make_host_convolver(int n, int reach) { return std::make_unique<FftConvolver>(n, reach); }

double host_convolver_bytes_per_pixel(int n, int reach, int filters) {
  const int m = convolution_size(n, reach);
  const double cells = static_cast<double>(m) * imaging::Fft2d::row_pitch(m);
  return (2 + filters) * sizeof(std::complex<float>) * cells / (static_cast<double>(n) * n);
}

}  // namespace spip::deconv
