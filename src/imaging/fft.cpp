#include "spip/imaging/fft.hpp"

#include <fftw3.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "spip/error.hpp"

namespace spip::imaging {
namespace {

// FFTW's planner is not thread-safe.
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

// $SPIP_FFTW_PLANNER=estimate takes FFTW's heuristic plans instead of timing candidates,
// and neither reads nor writes wisdom: every run of one build on one kind of CPU then
// transforms with the same plans, so its rounding repeats. Runs whose CLEAN meets a
// near tie between two pixels repeat exactly too, where timed plans that differ from
// run to run could break the tie either way. Transforms can be slower.
bool read_planner() {
  const char* planner = std::getenv("SPIP_FFTW_PLANNER");
  if (!planner || !*planner || std::string(planner) == "measure") return false;
  if (std::string(planner) == "estimate") return true;
  SPIP_THROW(Error, "SPIP_FFTW_PLANNER must be 'measure' or 'estimate', not '" + std::string(planner) + "'");
}

// Read once per process, as the wisdom is.
bool estimate_plans() {
  static const bool estimate = read_planner();
  return estimate;
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

constexpr std::size_t huge_page = std::size_t{2} << 20;

}  // namespace

// Through the aligned operator new, so that the memory tests, which replace it, count
// the grids as they count every other buffer.
FftBuffer::FftBuffer(std::size_t cells) : data_(nullptr), size_(cells) {
  // Grids of 2 MiB or more on 2 MiB boundaries (the allocator rounds their blocks up to
  // whole 2 MiB), their whole huge pages marked for transparent huge pages (fft.hpp);
  // smaller buffers on cache lines, which FFTW's codelets need. The tail past the last
  // whole huge page is marked for small pages: as a huge page, a grid just over a
  // multiple of 2 MiB held up to twice its bytes once its last cells were written
  // (FftBuffer.AGridJustOverHugePagesHoldsItsOwnBytes).
  const std::size_t bytes = std::max<std::size_t>(cells * sizeof(std::complex<float>), 1);
  alignment_ = bytes >= huge_page ? huge_page : 64;
  data_ = static_cast<std::complex<float>*>(::operator new(bytes, std::align_val_t{alignment_}, std::nothrow));
  if (!data_) SPIP_THROW(Error, "cannot allocate an FFT grid of " + std::to_string(cells) + " cells");
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
  if (alignment_ == huge_page) {
    const std::size_t whole = bytes / huge_page * huge_page;
    ::madvise(data_, whole, MADV_HUGEPAGE);
    if (whole < bytes) ::madvise(reinterpret_cast<char*>(data_) + whole, huge_page, MADV_NOHUGEPAGE);
  }
#endif
}

FftBuffer::~FftBuffer() { ::operator delete(data_, std::align_val_t{alignment_}); }

// Rows and columns are transformed in blocks of lines, one block per OpenMP iteration
// with single-threaded plans, and a last, shorter block when the size is not a
// multiple of it. Columns go in wider blocks: FFTW then runs its SIMD codelets across
// neighbouring columns instead of copying each block out and back (fftwf_cpy2d), which
// halved the column pass (7.6 against 4.0 ms for all 1536 columns of 1536^2 on 2
// threads, blocks of 8 and 32, rows 1536 cells apart, measured on the benchmark
// machine; with 1552 blocks of 16 to 64 columns all take 3.1-3.2 ms).
int lines_per_block(bool columns) { return columns ? 32 : 8; }

// A strided column transform costs 1.6 times a contiguous row's (measured there too,
// all lines on 2 threads, rows pitch() apart: 3.1 against 2.2 ms at 1536^2, 1.2
// against 0.6 ms at 1024^2, 6.9 against 4.2 ms at 2048^2).
constexpr double column_cost = 1.6;

// Single-threaded transforms of one block of rows or columns, and of the last block.
struct LinePlans {
  fftwf_plan block = nullptr, last = nullptr;
};

struct Fft2d::Plans {
  LinePlans lines[2][2];  // [0: forward, 1: backward][0: rows, 1: columns]
};

namespace {

// Plans assume the planning array's alignment, which lets FFTW take its aligned SIMD
// codelets: with FFTW_UNALIGNED, a 1250^2 transform took 9.9 ms and 1280^2 5.2 ms,
// against 8.7 and 3.6 ms aligned. Every block then has to start on a 64-byte boundary
// (the widest SIMD alignment FFTW has), which check_aligned() asks of the grid.
fftwf_plan plan_lines(int n, int count, bool columns, int sign, fftwf_complex* data, unsigned rigour) {
  if (count == 0) return nullptr;
  const int pitch = Fft2d::row_pitch(n), stride = columns ? pitch : 1, distance = columns ? 1 : pitch;
  return fftwf_plan_many_dft(1, &n, count, data, nullptr, stride, distance, data, nullptr, stride, distance, sign,
                             rigour);
}

constexpr std::size_t simd_alignment = 64;

// A block of rows starts 8 pitches after the last (8 (n + 16) cells of 8 bytes, a
// multiple of 64) and a block of columns 32 cells, so every block is aligned where the
// grid is.
void check_aligned(const std::complex<float>* data) {
  if (reinterpret_cast<std::uintptr_t>(data) % simd_alignment != 0)
    SPIP_THROW(Error, "an FFT grid must start on a 64-byte boundary");
}

// Transforms the blocks of lines (rows, or columns) that hold a flagged line.
void transform_lines(const LinePlans& plans, std::complex<float>* data, int n, bool columns,
                     const std::vector<std::uint8_t>& flagged) {
  const int per_block = lines_per_block(columns);
  const int blocks = (n + per_block - 1) / per_block;
  const std::size_t step = columns ? 1 : static_cast<std::size_t>(Fft2d::row_pitch(n));
#pragma omp parallel for schedule(dynamic, 4)
  for (int b = 0; b < blocks; ++b) {
    const int first = b * per_block, end = std::min(n, first + per_block);
    if (std::none_of(flagged.begin() + first, flagged.begin() + end, [](std::uint8_t f) { return f != 0; })) continue;
    auto* block = reinterpret_cast<fftwf_complex*>(data + first * step);
    fftwf_execute_dft(end - first == per_block ? plans.block : plans.last, block, block);
  }
}

// The lines a pass over `flagged` writes: every line of a block that holds one.
std::vector<std::uint8_t> written_lines(const std::vector<std::uint8_t>& flagged, bool columns) {
  const int n = static_cast<int>(flagged.size()), per_block = lines_per_block(columns);
  std::vector<std::uint8_t> written(flagged.size(), 0);
  for (int first = 0; first < n; first += per_block) {
    const int end = std::min(n, first + per_block);
    if (std::any_of(flagged.begin() + first, flagged.begin() + end, [](std::uint8_t f) { return f != 0; }))
      std::fill(written.begin() + first, written.begin() + end, 1);
  }
  return written;
}

std::size_t count(const std::vector<std::uint8_t>& flags) {
  return static_cast<std::size_t>(std::count_if(flags.begin(), flags.end(), [](std::uint8_t f) { return f != 0; }));
}

// Columns first: only the input's columns hold data, and only the output's rows are
// then needed; rows first is the mirror image. Whichever costs less.
bool columns_first(const Fft2d::Support& input, const Fft2d::Support& output) {
  return column_cost * count(input.columns) + count(output.rows) <=
         count(input.rows) + column_cost * count(output.columns);
}

void transform_pruned(const LinePlans& rows, const LinePlans& columns, std::complex<float>* data, int n,
                      const Fft2d::Support& input, const Fft2d::Support& output) {
  if (columns_first(input, output)) {
    transform_lines(columns, data, n, true, input.columns);
    transform_lines(rows, data, n, false, output.rows);
  } else {
    transform_lines(rows, data, n, false, input.rows);
    transform_lines(columns, data, n, true, output.columns);
  }
}

}  // namespace

Fft2d::Fft2d(int n) : n_(n), plans_(std::make_unique<Plans>()) {
  std::lock_guard<std::mutex> lock(planner_mutex());
  static const std::string wisdom = estimate_plans() ? std::string() : wisdom_path();
  static const bool imported = !wisdom.empty() && fftwf_import_wisdom_from_filename(wisdom.c_str());
  (void)imported;
  const unsigned rigour = estimate_plans() ? FFTW_ESTIMATE : FFTW_MEASURE;
  FftBuffer scratch(cells());
  auto* data = reinterpret_cast<fftwf_complex*>(scratch.data());
  bool planned = true;
  for (int direction = 0; direction < 2; ++direction)
    for (int columns = 0; columns < 2; ++columns) {
      const int sign = direction == 0 ? FFTW_FORWARD : FFTW_BACKWARD;
      LinePlans& lines = plans_->lines[direction][columns];
      const int per_block = lines_per_block(columns);
      lines.block = plan_lines(n, std::min(n, per_block), columns, sign, data, rigour);
      lines.last = plan_lines(n, n % per_block, columns, sign, data, rigour);
      planned = planned && lines.block && (n % per_block == 0 || lines.last);
    }
  if (!planned) SPIP_THROW(Error, "FFTW could not plan a " + std::to_string(n) + "^2 transform");
  save_wisdom(wisdom);
}

const char* Fft2d::planner() { return estimate_plans() ? "FFTW_ESTIMATE" : "FFTW_MEASURE"; }

Fft2d::~Fft2d() {
  std::lock_guard<std::mutex> lock(planner_mutex());
  for (auto& direction : plans_->lines)
    for (LinePlans& lines : direction)
      for (fftwf_plan plan : {lines.block, lines.last})
        if (plan) fftwf_destroy_plan(plan);
}

const Fft2d& Fft2d::shared(int n) {
  // The planner's mutex outlives the plans, which lock it when they are destroyed.
  planner_mutex();
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<Fft2d>> plans;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Fft2d>& plan = plans[n];
  if (!plan) plan = std::make_unique<Fft2d>(n);
  return *plan;
}

void Fft2d::forward(std::complex<float>* data, const Support& input, const Support& output) const {
  check_aligned(data);
  transform_pruned(plans_->lines[0][0], plans_->lines[0][1], data, n_, input, output);
}

void Fft2d::backward(std::complex<float>* data, const Support& input, const Support& output) const {
  check_aligned(data);
  transform_pruned(plans_->lines[1][0], plans_->lines[1][1], data, n_, input, output);
}

// Columns first, the blocks of the input's columns and of the output's rows were
// transformed: those rows whole, and in every other row those columns' cells. Rows
// first, the mirror image.
void Fft2d::clear(std::complex<float>* data, const Support& input, const Support& output) const {
  const bool by_columns = columns_first(input, output);
  const std::vector<std::uint8_t> whole_rows = written_lines(by_columns ? output.rows : input.rows, false);
  const std::vector<std::uint8_t> columns = written_lines(by_columns ? input.columns : output.columns, true);
  std::vector<std::pair<int, int>> runs;  // [first, end) of consecutive flagged columns
  for (int c = 0; c < n_; ++c)
    if (columns[c] && (runs.empty() || runs.back().second != c))
      runs.emplace_back(c, c + 1);
    else if (columns[c])
      ++runs.back().second;
  const auto n = static_cast<std::size_t>(n_), pitch = static_cast<std::size_t>(row_pitch(n_));
#pragma omp parallel for schedule(static)
  for (int r = 0; r < n_; ++r) {
    std::complex<float>* row = data + r * pitch;
    if (whole_rows[r]) {
      std::fill(row, row + n, std::complex<float>{});
    } else {
      for (const auto& [first, end] : runs) std::fill(row + first, row + end, std::complex<float>{});
    }
  }
}

}  // namespace spip::imaging
