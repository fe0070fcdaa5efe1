#include "psf_convolution.hpp"

#include <algorithm>

#include "spip/imaging/geometry.hpp"

namespace spip::deconv {
namespace {

// Pixel (x, y) of an N x N image sits at (x, y) of the M x M grid, and PSF pixel (sx, sy)
// at (sx - N/2, sy - N/2) mod M, so that the grid's circular convolution places each
// component's PSF peak on the component.
std::size_t psf_cell(int sx, int sy, int n, int m) {
  const int gx = (sx - n / 2 + m) % m, gy = (sy - n / 2 + m) % m;
  return static_cast<std::size_t>(gy) * m + gx;
}

}  // namespace

PsfConvolution::PsfConvolution(const float* psf, int n)
    : n_(n),
      m_(imaging::good_fft_size((3 * n + 1) / 2)),
      fft_(imaging::Fft2d::shared(m_)),
      psf_transform_(static_cast<std::size_t>(m_) * m_),
      work_(static_cast<std::size_t>(m_) * m_),
      all_(imaging::Fft2d::full(m_)),
      window_{std::vector<std::uint8_t>(m_, 0), std::vector<std::uint8_t>(m_, 0)} {
  std::fill(window_.rows.begin(), window_.rows.begin() + n, 1);
  std::fill(window_.columns.begin(), window_.columns.begin() + n, 1);
  std::complex<float>* grid = work_.data();
  std::fill(grid, grid + work_.size(), std::complex<float>{});
  for (int sy = 0; sy < n; ++sy)
    for (int sx = 0; sx < n; ++sx) grid[psf_cell(sx, sy, n, m_)] = psf[static_cast<std::size_t>(sy) * n + sx];
  fft_.forward(grid, all_, all_);
  const float scale = 1.0f / (static_cast<float>(m_) * static_cast<float>(m_));
  std::transform(grid, grid + work_.size(), psf_transform_.begin(), [&](std::complex<float> v) { return v * scale; });
}

// Two real planes per complex transform: the PSF is real, so the convolution of
// a + i b is (a * psf) + i (b * psf).
void PsfConvolution::subtract(const std::vector<Component>& components, float* residual) const {
  const std::size_t pixels = static_cast<std::size_t>(n_) * n_;
  std::complex<float>* grid = work_.data();
  for (int pair = 0; pair < 2; ++pair) {
    const int re = 2 * pair, im = 2 * pair + 1;
    if (std::none_of(components.begin(), components.end(),
                     [&](const Component& c) { return c.flux[re] != 0 || c.flux[im] != 0; }))
      continue;
    std::fill(grid, grid + work_.size(), std::complex<float>{});
    imaging::Fft2d::Support occupied{std::vector<std::uint8_t>(m_, 0), std::vector<std::uint8_t>(m_, 0)};
    for (const Component& c : components) {
      const std::size_t x = c.pixel % n_, y = c.pixel / n_;
      grid[y * m_ + x] += std::complex<float>(c.flux[re], c.flux[im]);
      occupied.rows[y] = occupied.columns[x] = 1;
    }
    fft_.forward(grid, occupied, all_);
#pragma omp parallel for schedule(static)
    for (std::size_t cell = 0; cell < work_.size(); ++cell) grid[cell] *= psf_transform_[cell];
    fft_.backward(grid, all_, window_);
    float* plane_re = residual + re * pixels;
    float* plane_im = residual + im * pixels;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < n_; ++y)
      for (int x = 0; x < n_; ++x) {
        const std::complex<float> v = grid[static_cast<std::size_t>(y) * m_ + x];
        plane_re[static_cast<std::size_t>(y) * n_ + x] -= v.real();
        plane_im[static_cast<std::size_t>(y) * n_ + x] -= v.imag();
      }
  }
}

}  // namespace spip::deconv
