#pragma once
// A complex number that both nvcc and the host compiler can use in per-element math
// (std::complex is host-only). It has the real()/imag() accessors of std::complex so
// that templates in the shared headers accept either.
#include <cmath>

#include "spip/common/host_device.hpp"

namespace spip {

template <class T>
struct Complex {
  T re = 0, im = 0;
  SPIP_HOST_DEVICE constexpr Complex() = default;
  SPIP_HOST_DEVICE constexpr Complex(T real, T imag = 0) : re(real), im(imag) {}
  SPIP_HOST_DEVICE constexpr T real() const { return re; }
  SPIP_HOST_DEVICE constexpr T imag() const { return im; }
  SPIP_HOST_DEVICE constexpr Complex operator+(Complex o) const { return {re + o.re, im + o.im}; }
  SPIP_HOST_DEVICE constexpr Complex operator-(Complex o) const { return {re - o.re, im - o.im}; }
  SPIP_HOST_DEVICE constexpr Complex operator*(Complex o) const { return {re * o.re - im * o.im, re * o.im + im * o.re}; }
  SPIP_HOST_DEVICE constexpr Complex operator*(T s) const { return {re * s, im * s}; }
  SPIP_HOST_DEVICE Complex& operator+=(Complex o) {
    re += o.re;
    im += o.im;
    return *this;
  }
};

template <class T>
SPIP_HOST_DEVICE constexpr Complex<T> conj(Complex<T> z) {
  return {z.re, -z.im};
}

// exp(i angle)
SPIP_HOST_DEVICE inline Complex<double> unit_phasor(double angle) { return {cos(angle), sin(angle)}; }

}  // namespace spip
