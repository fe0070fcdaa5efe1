#include <cufft.h>

#include <vector>

#include "detail/cuda_check.hpp"
#include "spip/cuda/scale_convolver.hpp"

namespace spip::cuda {
namespace {

using detail::DeviceArray;

constexpr int threads_per_block = 256;

__device__ cufftComplex times(cufftComplex a, cufftComplex b) {
  return {a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x};
}

// out = spectrum times the product of `count` filter transforms (deconv::filter_product).
__global__ void filter_kernel(const cufftComplex* spectrum, const cufftComplex* const* filters, int count,
                              float grid_cells, long long cells, cufftComplex* out) {
  const long long cell = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (cell >= cells) return;
  cufftComplex product = filters[0][cell];
  for (int k = 1; k < count; ++k) {
    const cufftComplex f = filters[k][cell];
    product = times(product, {f.x * grid_cells, f.y * grid_cells});
  }
  out[cell] = times(spectrum[cell], product);
}

__global__ void scale_kernel(cufftComplex* data, float scale, long long cells) {
  const long long cell = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (cell < cells) data[cell] = {data[cell].x * scale, data[cell].y * scale};
}

class DeviceConvolver final : public deconv::Convolver {
 public:
  DeviceConvolver(int device, int n, int reach)
      : device_(device), n_(n), m_(deconv::convolution_size(n, reach)), host_(static_cast<std::size_t>(n) * n) {
    SPIP_CUDA_CHECK(cudaSetDevice(device_));
    spectrum_ = DeviceArray<cufftComplex>(cells());
    work_ = DeviceArray<cufftComplex>(cells());
    SPIP_CUDA_CHECK(cufftPlan2d(&plan_, m_, m_, CUFFT_C2C));
  }
  ~DeviceConvolver() override {
    cudaSetDevice(device_);
    cufftDestroy(plan_);
  }

  int add_filter(const float* filter, int side) override {
    SPIP_CUDA_CHECK(cudaSetDevice(device_));
    std::vector<cufftComplex> grid(cells(), cufftComplex{0, 0});
    for (int sy = 0; sy < side; ++sy)
      for (int sx = 0; sx < side; ++sx)
        grid[deconv::filter_cell(sx, sy, side, m_, m_)] = {filter[static_cast<std::size_t>(sy) * side + sx], 0};
    DeviceArray<cufftComplex>& transform = transforms_.emplace_back(cells());
    SPIP_CUDA_CHECK(cudaMemcpy(transform.get(), grid.data(), transform.bytes(), cudaMemcpyHostToDevice));
    SPIP_CUDA_CHECK(cufftExecC2C(plan_, transform.get(), transform.get(), CUFFT_FORWARD));
    scale_kernel<<<blocks(), threads_per_block>>>(transform.get(), 1.0f / grid_cells(), cells());
    SPIP_CUDA_CHECK(cudaGetLastError());
    SPIP_CUDA_CHECK(cudaDeviceSynchronize());
    return static_cast<int>(transforms_.size()) - 1;
  }

  void convolve(const float* in, int planes, const std::vector<std::vector<int>>& products,
                const std::vector<float*>& out) override {
    SPIP_CUDA_CHECK(cudaSetDevice(device_));
    const std::size_t pixels = static_cast<std::size_t>(n_) * n_;
    for (int re = 0; re < planes; re += 2) {
      const int im = re + 1 < planes ? re + 1 : -1;
      for (std::size_t p = 0; p < pixels; ++p) host_[p] = {in[re * pixels + p], im < 0 ? 0.0f : in[im * pixels + p]};
      SPIP_CUDA_CHECK(cudaMemset(spectrum_.get(), 0, spectrum_.bytes()));
      SPIP_CUDA_CHECK(cudaMemcpy2D(spectrum_.get(), m_ * sizeof(cufftComplex), host_.data(), n_ * sizeof(cufftComplex),
                                   n_ * sizeof(cufftComplex), n_, cudaMemcpyHostToDevice));
      SPIP_CUDA_CHECK(cufftExecC2C(plan_, spectrum_.get(), spectrum_.get(), CUFFT_FORWARD));
      for (std::size_t f = 0; f < products.size(); ++f) {
        filter(products[f]);
        SPIP_CUDA_CHECK(cufftExecC2C(plan_, work_.get(), work_.get(), CUFFT_INVERSE));
        SPIP_CUDA_CHECK(cudaMemcpy2D(host_.data(), n_ * sizeof(cufftComplex), work_.get(), m_ * sizeof(cufftComplex),
                                     n_ * sizeof(cufftComplex), n_, cudaMemcpyDeviceToHost));
        for (std::size_t p = 0; p < pixels; ++p) {
          out[f][re * pixels + p] = host_[p].x;
          if (im >= 0) out[f][im * pixels + p] = host_[p].y;
        }
      }
    }
  }

 private:
  long long cells() const { return static_cast<long long>(m_) * m_; }
  float grid_cells() const { return static_cast<float>(m_) * static_cast<float>(m_); }
  unsigned blocks() const { return static_cast<unsigned>((cells() + threads_per_block - 1) / threads_per_block); }

  void filter(const std::vector<int>& product) {
    std::vector<const cufftComplex*> pointers;
    for (int k : product) pointers.push_back(transforms_[k].get());
    if (filter_list_.size() < pointers.size()) filter_list_ = DeviceArray<const cufftComplex*>(pointers.size());
    SPIP_CUDA_CHECK(cudaMemcpy(filter_list_.get(), pointers.data(), pointers.size() * sizeof(pointers[0]),
                               cudaMemcpyHostToDevice));
    filter_kernel<<<blocks(), threads_per_block>>>(spectrum_.get(), filter_list_.get(), static_cast<int>(pointers.size()),
                                                   grid_cells(), cells(), work_.get());
    SPIP_CUDA_CHECK(cudaGetLastError());
  }

  int device_, n_, m_;
  cufftHandle plan_ = 0;
  DeviceArray<cufftComplex> spectrum_, work_;
  DeviceArray<const cufftComplex*> filter_list_;
  std::vector<DeviceArray<cufftComplex>> transforms_;  // each scaled by 1 / M^2
  std::vector<cufftComplex> host_;                     // one pair of planes
};

}  // namespace

std::unique_ptr<deconv::Convolver> make_scale_convolver(int device, int n, int reach) {
  return std::make_unique<DeviceConvolver>(device, n, reach);
}

}  // namespace spip::cuda
