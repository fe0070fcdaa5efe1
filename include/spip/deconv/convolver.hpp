#pragma once
// Linear convolutions of N x N images with a few fixed filters (the PSF, the multiscale
// kernels), through FFTs of size M >= 3N/2 + reach: enough for the N x N window of a
// linear convolution with an N x N filter centred at (N/2, N/2), or with a larger
// filter or a product of filters that reaches `reach` pixels further, to see no
// wrap-around.
// The CPU's is FFTW (make_host_convolver); the GPU backend's is cuFFT, in cuda/.
#include <complex>
#include <cstddef>
#include <memory>
#include <vector>

namespace spip::deconv {

class Convolver {
 public:
  virtual ~Convolver() = default;
  // Keeps the transform of `filter` (side x side, its centre at (side/2, side/2),
  // reaching at most N/2 + reach pixels from it); returns its index.
  virtual int add_filter(const float* filter, int side) = 0;
  // For each product f: out[f] = in convolved with the filters products[f] (each index
  // once or more), over `planes` N x N planes (two real planes per complex transform:
  // the filters are real). Each input plane is transformed once for all products.
  virtual void convolve(const float* in, int planes, const std::vector<std::vector<int>>& products,
                        const std::vector<float*>& out) = 0;
};

std::unique_ptr<Convolver> make_host_convolver(int n, int reach = 0);

// The FFT size both convolvers use for N x N images.
int convolution_size(int n, int reach);

// The reach of filters that extend no more than `radius` pixels from their centre:
// less than an image-sized PSF's (negative), since an N x N image convolved with such a
// filter needs an FFT of only N + radius to see no wrap-around.
inline int kernel_reach(int n, int radius) { return radius - (n + 1) / 2; }

// What make_host_convolver(n, reach) holds with `filters` filters, per image pixel:
// its two complex work planes and each filter's transform, all M x M (rows a pitch apart).
double host_convolver_bytes_per_pixel(int n, int reach, int filters);

// Where filter pixel (sx, sy) of a side x side filter goes on the M x M grid whose rows
// lie `pitch` cells apart: (sx - side/2, sy - side/2) mod M, so that the grid's circular
// convolution leaves each input pixel's response centred on it. Image pixel (x, y) sits
// at (x, y).
inline std::size_t filter_cell(int sx, int sy, int side, int m, int pitch) {
  const int gx = (sx - side / 2 + m) % m, gy = (sy - side / 2 + m) % m;
  return static_cast<std::size_t>(gy) * pitch + gx;
}

// The product of filter transforms t[0] ... t[k-1], each scaled by 1 / M^2 when it was
// kept (so that one filter alone needs no further scaling): t[0] t[1] ... M^(2(k-1)).
inline std::complex<float> filter_product(const std::vector<const std::complex<float>*>& transforms, std::size_t cell,
                                          float grid_cells) {
  std::complex<float> product = transforms[0][cell];
  for (std::size_t k = 1; k < transforms.size(); ++k) product *= transforms[k][cell] * grid_cells;
  return product;
}

}  // namespace spip::deconv
