#pragma once
// In-place single-precision 2-D complex FFTs of one size, shared by the gridder and
// CLEAN, done as a pass over rows and a pass over columns that skip the lines that
// cannot matter. Plans are measured once per size and process (FFTW_MEASURE) and
// their wisdom is kept between runs, so only a machine's first run pays for it.
#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace spip::imaging {

// Complex storage on 2 MiB boundaries, marked for transparent huge pages: a column
// pass strides a whole row per element, which on 4 KiB pages costs a TLB miss each
// (FFTW's SIMD codelets need far less alignment).
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
  std::size_t alignment_ = 0;
};

// Unnormalised n x n transforms over the calling code's OpenMP threads:
// forward sums exp(-2 pi i k x / n), backward exp(+2 pi i k x / n). A grid's rows lie
// pitch() cells apart, 16 more than n: a column pass strides from row to row, and
// strides of a large power of 2 in bytes meet the same cache sets over and over
// (all 1536 columns of 1536^2 took 5.7 ms over 2 threads with rows 1536 cells apart,
// 3.1 ms with 1552; FFTW 3.3.10, benchmark machine).
// Cells past n in a row are never read or written by a transform.
class Fft2d {
 public:
  static int row_pitch(int n) { return n + 16; }
  explicit Fft2d(int n);
  ~Fft2d();
  // One set of plans per size for the whole process; executing them is thread-safe.
  static const Fft2d& shared(int n);
  // How plans are made: "FFTW_MEASURE", or "FFTW_ESTIMATE" where $SPIP_FFTW_PLANNER asks.
  static const char* planner();
  Fft2d(const Fft2d&) = delete;
  Fft2d& operator=(const Fft2d&) = delete;

  // Flags (n each) of the rows and columns of a grid that matter.
  struct Support {
    std::vector<std::uint8_t> rows, columns;
  };
  static Support full(int n) { return {std::vector<std::uint8_t>(n, 1), std::vector<std::uint8_t>(n, 1)}; }

  // `data` must be zero outside the rows and columns of `input` (an image in its
  // padded grid, a sparse CLEAN model, the uv cells that visibilities reach); the
  // result is right wherever both the row and the column are in `output`, and
  // undefined elsewhere. Whichever order of the two passes costs less is taken.
  // `data` must start on a 64-byte boundary (an FftBuffer, or a lane of one whose
  // size is a good_fft_size(), cells() apart); anything else throws.
  void forward(std::complex<float>* data, const Support& input, const Support& output) const;
  void backward(std::complex<float>* data, const Support& input, const Support& output) const;
  // Zeroes every cell that forward() or backward() with these supports can have made
  // nonzero: the grid is then zero again for the next transform, at a fraction of a
  // whole grid's clearing where the supports are narrow.
  void clear(std::complex<float>* data, const Support& input, const Support& output) const;
  int size() const { return n_; }
  int pitch() const { return row_pitch(n_); }
  // Cells a grid holds: cell (x, y) is at y * pitch() + x.
  std::size_t cells() const { return static_cast<std::size_t>(n_) * pitch(); }

 private:
  struct Plans;
  int n_;
  std::unique_ptr<Plans> plans_;
};

}  // namespace spip::imaging
