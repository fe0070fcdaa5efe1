#pragma once
// RM synthesis on a GPU: the Faraday cube of a pixel slab as one cublasCgemm. Same
// layout and arithmetic as faraday::synthesise (A built by faraday::synthesis_matrix
// from the shared synthesis_element()). No CUDA types cross this header.
#include <complex>
#include <cstddef>

namespace spip::cuda {

// Device memory the product needs: A, P and F in complex64.
std::size_t synthesis_bytes(int num_phi, int num_chan, int num_pixels);

// F[phi][pixel] = A[phi][c] P[c][pixel] on `device`. Throws spip::Error if the device
// cannot hold the operands (saying how much is needed and free) or a CUDA call fails.
void synthesise(int device, const std::complex<float>* a, int num_phi, int num_chan, const std::complex<float>* p,
                int num_pixels, std::complex<float>* f);

}  // namespace spip::cuda
