#include <cub/block/block_reduce.cuh>

#include "detail/density_weighting.hpp"

namespace spip::cuda::detail {
namespace {

constexpr int threads_per_block = 256;
// Blocks of the density sums: each strides over the cells, so their count is fixed and
// the sums come out the same for the same densities.
constexpr int sum_blocks = 256;

// The weight a row counts in the densities (imaging::density_weight), within the limits.
__device__ double counted_weight(const imaging::UvTerms& terms, const float* weights, long long k, double u, double v) {
  return imaging::density_weight(weights + 4 * k, 4, imaging::uv_limits(terms, u, v));
}

__global__ void density_kernel(const double* uvw_m, double scale, const float* weights, long long rows,
                               imaging::UvTerms terms, int size, double cell, double* density) {
  const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= rows) return;
  const double u = uvw_m[3 * k] * scale, v = uvw_m[3 * k + 1] * scale;
  const double w = counted_weight(terms, weights, k, u, v);
  if (!(w > 0)) return;
  // Each visibility together with its Hermitian conjugate.
  const long long cell_of_point = imaging::density_cell(size, cell, u, v);
  const long long cell_of_mirror = imaging::density_cell(size, cell, -u, -v);
  if (cell_of_point >= 0) atomicAdd(density + cell_of_point, w);
  if (cell_of_mirror >= 0) atomicAdd(density + cell_of_mirror, w);
}

// Per block, over a fixed stride of cells: the sum of the densities and of their
// squares (CUB's block reduction, a fixed order for a fixed block size).
__global__ void density_sums_kernel(const double* density, long long cells, double* partials) {
  using Reduce = cub::BlockReduce<double, threads_per_block>;
  __shared__ typename Reduce::TempStorage storage;
  double sum = 0, squares = 0;
  for (long long c = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; c < cells;
       c += static_cast<long long>(gridDim.x) * blockDim.x) {
    sum += density[c];
    squares += density[c] * density[c];
  }
  sum = Reduce(storage).Sum(sum);
  __syncthreads();  // the storage is used again
  squares = Reduce(storage).Sum(squares);
  if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = sum;
    partials[2 * blockIdx.x + 1] = squares;
  }
}

__global__ void briggs_f2_kernel(const double* partials, double robust, double* f2) {
  double sum = 0, squares = 0;
  for (int b = 0; b < sum_blocks; ++b) {
    sum += partials[2 * b];
    squares += partials[2 * b + 1];
  }
  *f2 = imaging::briggs_f2(robust, sum, squares);
}

// densities null: the limits and the taper only; else the density between them.
__global__ void weights_kernel(const double* uvw_m, double scale, float* weights, long long rows,
                               imaging::UvTerms terms, int size, double cell, const double* density, bool uniform,
                               const double* f2) {
  const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= rows) return;
  const double u = uvw_m[3 * k] * scale, v = uvw_m[3 * k + 1] * scale;
  double factor = imaging::uv_limits(terms, u, v);
  if (density && counted_weight(terms, weights, k, u, v) > 0) {
    const long long c = imaging::density_cell(size, cell, u, v);
    if (c >= 0) factor /= imaging::density_divisor(uniform, density[c], uniform ? 0.0 : *f2);
  }
  factor *= imaging::uv_taper(terms, u, v);
  for (int s = 0; s < 4; ++s) weights[4 * k + s] = static_cast<float>(weights[4 * k + s] * factor);
}

}  // namespace

DensityWeighting::DensityWeighting(const imaging::WeightingScheme& scheme, const imaging::ImageGeometry& geometry)
    : unchanged_(imaging::weights_unchanged(scheme)),
      densities_(scheme.mode != Weighting::natural),
      uniform_(scheme.mode == Weighting::uniform),
      robust_(scheme.robust),
      terms_(imaging::uv_terms(scheme)),
      size_(imaging::density_grid_size(geometry)),
      cell_(imaging::density_cell_size(geometry)) {
  if (!densities_) return;
  density_ = DeviceArray<double>(static_cast<std::size_t>(size_) * size_);
  partials_ = DeviceArray<double>(2 * sum_blocks);
  f2_ = DeviceArray<double>(1);
}

std::size_t DensityWeighting::device_bytes(const imaging::WeightingScheme& scheme,
                                           const imaging::ImageGeometry& geometry) {
  const std::size_t side = imaging::density_grid_size(geometry);
  return scheme.mode == Weighting::natural ? 0 : (side * side + 2 * sum_blocks + 1) * sizeof(double);
}

void DensityWeighting::apply(const double* uvw_m, double scale, float* weights, long long rows, cudaStream_t stream,
                             const imaging::RowGroup* group) {
  // A member without rows still takes its part in the group's sum.
  if (unchanged_ || (rows == 0 && !(group && densities_))) return;
  const unsigned blocks = std::max(1u, blocks_for(rows, threads_per_block));
  if (densities_) {
    SPIP_CUDA_CHECK(cudaMemsetAsync(density_.get(), 0, density_.bytes(), stream));
    density_kernel<<<blocks, threads_per_block, 0, stream>>>(uvw_m, scale, weights, rows, terms_, size_, cell_,
                                                             density_.get());
  }
  if (densities_ && group) {
    group_density_.resize(density_.size());
    SPIP_CUDA_CHECK(cudaMemcpyAsync(group_density_.data(), density_.get(), density_.bytes(), cudaMemcpyDeviceToHost,
                                    stream));
    SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
    group->sum(group_density_);
    SPIP_CUDA_CHECK(cudaMemcpyAsync(density_.get(), group_density_.data(), density_.bytes(), cudaMemcpyHostToDevice,
                                    stream));
    // From pageable memory, the copy has read group_density_ when it returns.
  }
  if (densities_ && !uniform_) {  // Briggs's f^2
    density_sums_kernel<<<sum_blocks, threads_per_block, 0, stream>>>(
        density_.get(), static_cast<long long>(density_.size()), partials_.get());
    briggs_f2_kernel<<<1, 1, 0, stream>>>(partials_.get(), robust_, f2_.get());
  }
  weights_kernel<<<blocks, threads_per_block, 0, stream>>>(uvw_m, scale, weights, rows, terms_, size_, cell_,
                                                           densities_ ? density_.get() : nullptr, uniform_, f2_.get());
  SPIP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace spip::cuda::detail
