#pragma once
// One element of the RM-synthesis matrix, A[phi][c] = K w_c exp(-2i phi (lambda_c^2 - lambda0^2)),
// in double: the arithmetic shared by the CPU and CUDA backends.
#include <cmath>

#include "spip/common/host_device.hpp"

namespace spip::faraday {

struct SynthesisElement {
  double re, im;
};

// `scaled_weight` is K w_c.
SPIP_HOST_DEVICE inline SynthesisElement synthesis_element(double phi, double lambda_sq, double lambda0_sq,
                                                           double scaled_weight) {
  const double angle = -2.0 * phi * (lambda_sq - lambda0_sq);
  return {scaled_weight * cos(angle), scaled_weight * sin(angle)};
}

}  // namespace spip::faraday
