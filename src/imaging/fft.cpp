#include "spip/imaging/fft.hpp"

#include <fftw3.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <string>

#include "spip/error.hpp"

namespace spip::imaging {
namespace {

// FFTW's planner is not thread-safe and its threads are set up once per process.
std::mutex& planner_mutex() {
  static std::mutex mutex;
  return mutex;
}

// $SPIP_FFTW_WISDOM (default ~/.cache/spip/fftwf-wisdom), written atomically so that
// concurrent ranks never read half a file. A missing or stale file only costs time.
std::string wisdom_path() {
  if (const char* path = std::getenv("SPIP_FFTW_WISDOM")) return path;
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (cache && *cache) return std::string(cache) + "/spip/fftwf-wisdom";
  if (home && *home) return std::string(home) + "/.cache/spip/fftwf-wisdom";
  return {};
}

void save_wisdom(const std::string& path) {
  if (path.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  char host[256] = "host";
  ::gethostname(host, sizeof host - 1);
  const std::string partial = path + "." + host + "." + std::to_string(::getpid()) + ".partial";
  if (fftwf_export_wisdom_to_filename(partial.c_str())) std::filesystem::rename(partial, path, error);
  std::filesystem::remove(partial, error);
}

}  // namespace

FftBuffer::FftBuffer(std::size_t cells)
    : data_(reinterpret_cast<std::complex<float>*>(fftwf_alloc_complex(cells))), size_(cells) {
  if (!data_) SPIP_THROW(Error, "cannot allocate an FFT grid of " + std::to_string(cells) + " cells");
}

FftBuffer::~FftBuffer() { fftwf_free(data_); }

struct Fft2d::Plans {
  fftwf_plan forward = nullptr, backward = nullptr;
};

Fft2d::Fft2d(int n, int threads) : n_(n), plans_(std::make_unique<Plans>()) {
  std::lock_guard<std::mutex> lock(planner_mutex());
  static const bool threads_ready = fftwf_init_threads() != 0;
  if (threads_ready) fftwf_plan_with_nthreads(threads);
  static const std::string wisdom = wisdom_path();
  static const bool imported = !wisdom.empty() && fftwf_import_wisdom_from_filename(wisdom.c_str());
  (void)imported;
  FftBuffer scratch(static_cast<std::size_t>(n) * n);
  auto* data = reinterpret_cast<fftwf_complex*>(scratch.data());
  // Measured plans cost ~1 s per size once per process; FFTW_ESTIMATE's threaded
  // plans ran 2.5x slower on the benchmark (docs/benchmarks.md).
  plans_->forward = fftwf_plan_dft_2d(n, n, data, data, FFTW_FORWARD, FFTW_MEASURE);
  plans_->backward = fftwf_plan_dft_2d(n, n, data, data, FFTW_BACKWARD, FFTW_MEASURE);
  if (!plans_->forward || !plans_->backward)
    SPIP_THROW(Error, "FFTW could not plan a " + std::to_string(n) + "^2 transform");
  save_wisdom(wisdom);
}

Fft2d::~Fft2d() {
  std::lock_guard<std::mutex> lock(planner_mutex());
  fftwf_destroy_plan(plans_->forward);
  fftwf_destroy_plan(plans_->backward);
}

const Fft2d& Fft2d::shared(int n, int threads) {
  // The planner's mutex outlives the plans, which lock it when they are destroyed.
  planner_mutex();
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::unique_ptr<Fft2d>> plans;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Fft2d>& plan = plans[{n, threads}];
  if (!plan) plan = std::make_unique<Fft2d>(n, threads);
  return *plan;
}

void Fft2d::forward(std::complex<float>* data) const {
  auto* d = reinterpret_cast<fftwf_complex*>(data);
  fftwf_execute_dft(plans_->forward, d, d);
}

void Fft2d::backward(std::complex<float>* data) const {
  auto* d = reinterpret_cast<fftwf_complex*>(data);
  fftwf_execute_dft(plans_->backward, d, d);
}

}  // namespace spip::imaging
