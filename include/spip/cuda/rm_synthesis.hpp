#pragma once
// RM synthesis on a GPU, the peer of faraday::synthesise and faraday::synthesise_slab:
// the Faraday cube of a pixel slab as one cublasCgemm, then RM-CLEAN and the peak fit
// of every pixel's spectrum with one thread per pixel, running the shared per-pixel
// math of spectrum_math.hpp on the [phi][pixel] cube. No CUDA types cross this header.
#include <complex>
#include <cstddef>
#include <vector>

#include "spip/faraday/rm_synthesis.hpp"

namespace spip::cuda {

// Device memory of the bare product: A, P and F in complex64.
std::size_t synthesis_bytes(int num_phi, int num_chan, int num_pixels);
// Device memory of synthesise_slab(): A, P, the dirty, residual, model and clean cubes,
// the RMSF of twice the range, the pixel noise, the pixel maps and the iteration counts.
std::size_t slab_bytes(int num_phi, int num_chan, int num_pixels);

// F[phi][pixel] = A[phi][c] P[c][pixel] on `device`; with `f` null the cube stays
// there and is dropped, as the Faraday stage's is before RM-CLEAN (for benchmarks).
// Throws spip::Error if the device cannot hold the operands (saying how much is needed
// and free) or a CUDA call fails.
void synthesise(int device, const std::complex<float>* a, int num_phi, int num_chan, const std::complex<float>* p,
                int num_pixels, std::complex<float>* f);

// faraday::clean_slab() on `device`, with the same arguments and products.
faraday::SlabSpectra clean_slab(int device, std::vector<std::complex<float>> dirty, int num_pixels,
                                const std::vector<std::complex<float>>& rmsf_double,
                                const faraday::SpectrumSettings& settings, const std::vector<float>& pixel_sigmas = {});

// faraday::synthesise_slab() on `device`, with the same arguments and products, except
// the cubes that `kept` leaves on the device (empty).
faraday::SlabSpectra synthesise_slab(int device, const std::vector<std::complex<float>>& a, int num_chan,
                                     const std::complex<float>* p, int num_pixels,
                                     const std::vector<std::complex<float>>& rmsf_double,
                                     const faraday::SpectrumSettings& settings,
                                     const std::vector<float>& pixel_sigmas = {}, faraday::SlabCubes kept = {});

}  // namespace spip::cuda
