#pragma once
// In-place single-precision 2-D complex FFTs of one size, shared by the gridder and
// CLEAN. Plans are measured once per size and process (FFTW_MEASURE) and their wisdom
// is kept between runs, so only a machine's first run pays for the measuring.
#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace spip::imaging {

// FFTW-aligned complex storage (SIMD codelets need the alignment).
class FftBuffer {
 public:
  explicit FftBuffer(std::size_t cells);
  ~FftBuffer();
  FftBuffer(const FftBuffer&) = delete;
  FftBuffer& operator=(const FftBuffer&) = delete;
  std::complex<float>* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::complex<float>* data_;
  std::size_t size_;
};

// Unnormalised n x n transforms over `threads` OpenMP threads:
// forward sums exp(-2 pi i k x / n), backward exp(+2 pi i k x / n).
class Fft2d {
 public:
  Fft2d(int n, int threads);
  ~Fft2d();
  // One plan per (size, threads) for the whole process; executing it is thread-safe.
  static const Fft2d& shared(int n, int threads);
  Fft2d(const Fft2d&) = delete;
  Fft2d& operator=(const Fft2d&) = delete;
  void forward(std::complex<float>* data) const;
  void backward(std::complex<float>* data) const;

  // Flags (n each) of the rows and columns of a grid that matter.
  struct Support {
    std::vector<std::uint8_t> rows, columns;
  };

  // The same transforms as one pass over rows and one over columns, each skipping
  // the lines that cannot matter: `data` must be zero outside the rows and columns of
  // `input` (an image in its padded grid, a sparse CLEAN model, the uv cells that
  // visibilities reach), and the result is right wherever both the row and the column
  // are in `output`; elsewhere it is undefined. Whichever order costs less is taken.
  void forward(std::complex<float>* data, const Support& input, const Support& output) const;
  void backward(std::complex<float>* data, const Support& input, const Support& output) const;
  int size() const { return n_; }

 private:
  struct Plans;
  int n_;
  std::unique_ptr<Plans> plans_;
};

}  // namespace spip::imaging
