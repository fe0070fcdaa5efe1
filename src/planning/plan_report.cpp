// spip --plan: the job's figures per rank and what to ask sbatch for.
#include "spip/planning/plan_report.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "spip/common/constants.hpp"
#include "spip/cuda/device_imager.hpp"
#include "spip/cuda/device.hpp"
#include "spip/cuda/rm_synthesis.hpp"
#include "spip/error.hpp"
#include "spip/job/log.hpp"
#include "spip/planning/cost_rates.hpp"
#include "spip/planning/planning.hpp"
#include "spip/stages/channel_cubes.hpp"
#include "spip/stages/faraday_stage.hpp"
#include "spip/stages/plane_store.hpp"
#include "spip/version.hpp"

namespace spip::pipeline {

namespace {

// How many of the planned ranks share a node's memory (node_ranks), and why that many.
// Cores and memory are the whole node's, not this step's (srun -n1 -c8 --plan for a job
// of many ranks a node); GPUs are those this process sees (a step given none sees none).
struct NodeShare {
  int ranks = 1;
  std::string basis;
  double budget(const Config& config) const { return memory_budget_bytes(config.parallel, ranks, physical_memory_bytes()); }
  std::string describe(const Config& config) const {
    return "memory: " + std::to_string(ranks) + " rank(s) a node (" + basis + ")" +
           (config.parallel.memory_gb > 0 ? ", parallel.memory_gb each"
                                           : ", sharing a node's " + fixed(physical_memory_bytes() / 1e9, 1) +
                                                 " GB (a run takes less where its cgroup or Slurm gives it less)");
  }
};

// A GPU job's script gives each rank a GPU of its own, so a node holds no more ranks than
// GPUs; a node without one (a login node) cannot say how many the job's nodes have.
NodeShare node_share(const Config& config, int ranks, int threads, int given, const cuda::DeviceProbe& probe) {
  const bool gpu_job = config.parallel.device == Device::gpu;
  const int gpus = gpu_job ? static_cast<int>(probe.devices.size()) : 0;
  const int count = node_ranks(ranks, given, sysconf(_SC_NPROCESSORS_ONLN), threads, gpus);
  if (given > 0) return {count, "--plan-node-ranks"};
  if (!gpu_job) return {count, "as many as this node's cores hold; --plan-node-ranks sets it"};
  if (gpus > 0)
    return {count, "as many as this node's cores hold, one to each of its " + std::to_string(gpus) +
                       " visible GPU(s) at most; --plan-node-ranks sets it"};
  return {count, "as many as this node's cores hold, for it has no GPU to count; parallel.device = gpu gives each "
                 "rank a GPU of its own, so give --plan-node-ranks the job's GPUs a node"};
}

std::string clock_time(double seconds) {
  const long total = static_cast<long>(std::ceil(seconds));
  char text[32];
  std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  return text;
}

// A bundled sbatch script by the path that reaches it: beside an installed spip
// (PREFIX/share/spip/slurm, which knows its prefix), or in the checkout that built it,
// whose scripts find the job body through SPIP_HOME (`home`; sbatch passes the
// environment on); else as the README names it, for a submission from the checkout.
struct SlurmScript {
  std::string path, home;
};
SlurmScript slurm_script(const std::string& name) {
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error).parent_path();
  if (error) return {"slurm/" + name, ""};
  const std::filesystem::path installed = std::filesystem::canonical(exe / ".." / "share" / "spip" / "slurm" / name, error);
  if (!error) return {installed.string(), ""};
  const std::filesystem::path checkout = std::filesystem::canonical(exe / ".." / ".." / "..", error);
  if (!error && std::filesystem::is_regular_file(checkout / "slurm" / name, error))
    return {(checkout / "slurm" / name).string(), checkout.string()};
  return {"slurm/" + name, ""};
}

// The sbatch line for `ranks` ranks, `node_ranks` a node: one-node.sbatch where they fit
// one node, else multi-node.sbatch (multi-node-gpu.sbatch with parallel.device = gpu)
// on as many nodes as they need, the ranks in all given too where they do not fill the
// last. The time is what the run needs and the script's warning ahead of the limit
// (SPIP_WARNING_S).
std::string sbatch_line(int ranks, int node_ranks, int threads, long mem_per_cpu_mb, double run_s, bool gpu) {
  const bool one_node = ranks <= node_ranks && !gpu;
  const int nodes = (ranks + node_ranks - 1) / node_ranks;
  const SlurmScript script =
      slurm_script(one_node ? "one-node.sbatch" : gpu ? "multi-node-gpu.sbatch" : "multi-node.sbatch");
  return (script.home.empty() ? "" : "SPIP_HOME=" + script.home + " ") + "sbatch " +
         (one_node ? "--ntasks=" + std::to_string(ranks)
                   : "--nodes=" + std::to_string(nodes) + " --ntasks-per-node=" + std::to_string(node_ranks) +
                         (ranks % node_ranks ? " --ntasks=" + std::to_string(ranks) : "")) +
         " --cpus-per-task=" + std::to_string(threads) + " --mem-per-cpu=" + std::to_string(mem_per_cpu_mb) +
         "M --time=" + clock_time(run_s + (one_node ? 600 : 900)) + " " + script.path;
}

std::string gb(double bytes) { return fixed(bytes / 1e9, bytes < 1e8 ? 3 : 2) + " GB"; }

std::string size_text(double bytes) {
  return bytes >= 1e8 ? gb(bytes) : bytes >= 1e5 ? fixed(bytes / 1e6, 1) + " MB" : fixed(bytes / 1e3, 0) + " kB";
}

// "0.38 GB in DIR: 17 channel cubes 0.18 GB, 20 moment images 5.3 MB, ...", by kind.
std::string product_summary(const ProductRegistry& products) {
  std::map<ProductKind, std::pair<int, double>> kinds;
  for (const Product& product : products.all()) {
    auto& [count, bytes] = kinds[product.kind];
    ++count;
    bytes += product.bytes;
  }
  std::string by_kind;
  for (const auto& [kind, totals] : kinds)
    by_kind += (by_kind.empty() ? ": " : ", ") + std::to_string(totals.first) + " " + to_string(kind) +
               (totals.first > 1 ? "s " : " ") + size_text(totals.second);
  return gb(products.bytes_to_write()) + " in " + products.dir() + by_kind;
}

// How the GPU columns apply, and how many ranks one of this machine's GPUs would take
// (a run splits each GPU's free memory evenly between the ranks of its node on it).
std::string device_plan(const cuda::DeviceProbe& probe, double rank_bytes) {
  std::string text =
      "GPU columns: a rank's device memory while imaging and for its largest Faraday row group (a run shrinks the\n"
      "groups to the rank's share of its GPU); the times are the CPU backend's\n";
  if (probe.devices.empty()) return text + "no GPU here to fit ranks to (" + probe.reason + ")\n";
  const cuda::DeviceInfo& device = probe.devices.front();
  const double total = static_cast<double>(device.memory_bytes);
  constexpr double context_bytes = 512.0 * (1 << 20);  // a CUDA context on a current GPU, about
  return text + "GPU " + std::to_string(device.index) + " here (" + device.name + ", " + gb(total) +
         ") holds up to " + std::to_string(static_cast<long>(total / (rank_bytes + context_bytes))) +
         " such ranks, with 0.5 GiB for each one's CUDA context\n";
}

}  // namespace

namespace {

// The Faraday stage on another imager's cubes: what each rank measures, reads and holds.
void print_cube_plan(const Config& config, int ranks, const NodeShare& node, std::ostream& out) {
  const CubePlan plan = open_cube_plan(config, ranks);
  const int nx = plan.base.nx, ny = plan.base.ny, num_chan = static_cast<int>(plan.freq_hz.size());
  out << "spip " << version << " plan: " << ranks << " rank(s); the Faraday stage on another imager's cubes of "
      << nx << " x " << ny << " pixels, " << num_chan << " channels; " << plan.num_phi << " Faraday depths\n"
      << node.describe(config) << "\n\n";
  char line[200];
  std::snprintf(line, sizeof line, "%5s %15s %15s %14s %12s %20s\n", "rank", "channels", "slab rows", "rows a group",
                "Faraday mem", "kept planes");
  out << line;
  for (int r = 0; r < ranks; ++r) {
    const MemoryPlan memory = cube_memory(plan, r, node.budget(config));
    const parallel::ChannelBlock& block = plan.blocks[static_cast<std::size_t>(r)];
    const auto [y0, y1] = FaradayStage::slab_rows(r, ranks, ny);
    char channels[48], rows[48], kept[48];
    std::snprintf(channels, sizeof channels, "[%d, %d)", block.begin, block.end);
    std::snprintf(rows, sizeof rows, "[%d, %d)", y0, y1);
    std::snprintf(kept, sizeof kept, "%s %s", gb(memory.kept).c_str(), memory.kept_spilled ? "scratch" : "memory");
    std::snprintf(line, sizeof line, "%5d %15s %15s %14d %12s %20s\n", r, channels, rows,
                  FaradayStage::group_rows(memory.faraday_group, num_chan, plan.num_phi, nx, y1 - y0, 0),
                  gb(memory.faraday_group).c_str(), memory.kept > 0 ? kept : "none");
    out << line;
  }
  out << "\neach rank reads its channels' Q and U planes once (their noise and blanks), then its slab's rows of every "
         "cube, a group at a time\nproducts: "
      << product_summary(plan.products) << "\n";
  if (plan.num_phi > 0)
    for (const std::string& warning : FaradayStage::axis_warnings(plan.freq_hz, config.faraday)) out << warning << "\n";
}

}  // namespace

void print_plan(const Config& config, const PlanRequest& request, int mpi_ranks, std::ostream& out) {
  const int ranks = request.ranks > 0 ? request.ranks : mpi_ranks;
  // Without parallel.threads, the ranks share this machine's cores, as they would in a
  // run here; for other nodes, set parallel.threads to the intended --cpus-per-task.
  omp_set_num_threads(config.parallel.threads > 0 ? config.parallel.threads : std::max(1, omp_get_num_procs() / ranks));
  const int threads = omp_get_max_threads();
  const cuda::DeviceProbe probe = cuda::probe_devices();
  const NodeShare node = node_share(config, ranks, threads, request.node_ranks, probe);
  if (config.input.cubes()) return print_cube_plan(config, ranks, node, out);
  Plan plan = open_plan(config);
  const int num_chan = plan.chan_end - plan.chan_begin;
  const int num_phi = plan.num_phi;
  // From the metadata alone every row counts in every channel; a run balances the
  // unflagged visibilities plus each channel's grid work, counting them from FLAG.
  const std::vector<std::int64_t> uniform(static_cast<std::size_t>(num_chan), 1);
  const bool gpu = probe.backend_built && config.parallel.device != Device::cpu;
  // The ranks share nodes like this one, and may image on either backend.
  const MemoryBasis basis{node.budget(config),
                          std::max(clean_bytes_per_pixel(config.clean, plan.geometry, false),
                                   gpu ? clean_bytes_per_pixel(config.clean, plan.geometry, true) : 0.0),
                          imaging_bytes_per_row(config.image, config.clean, plan.geometry)};
  decompose(
      config, uniform, ranks,
      [&](double share) {
        return channel_imaging_bytes(plan.geometry, share * static_cast<double>(plan.max_visibilities),
                                     basis.clean_bytes_per_pixel, basis.row_bytes,
                                     static_cast<int>(plan.pointings.size())) <= basis.budget;
      },
      plan);
  const int group = plan.ranks_per_channel;

  // A run's refusal before anything is timed; and timing images a channel here, which a
  // channel that needs more than this node's memory must not try (a login node).
  const MemoryPlan first = plan_memory(memory_needs(config, plan, 0, basis));
  const double channel_bytes = first.process + first.imaging + first.channel_data;
  if (request.previous_qa.empty() && channel_bytes > node_memory_bytes())
    SPIP_THROW(ConfigError, "timing the rates here would image one channel in " + gb(channel_bytes) +
                                ", more than this node's " + gb(node_memory_bytes()) +
                                "; run --plan on a node like the job's, or give --plan-rates a short run's qa.json");
  out << "spip " << version << " plan: " << ranks << " rank(s) of " << threads << " OpenMP thread(s); channels ["
      << plan.chan_begin << ", " << plan.chan_end << ") of " << input_count(plan) << ", "
      << plan.max_visibilities << " rows per channel; " << plan.geometry.size << "^2 pixels on a "
      << plan.geometry.grid_size << "^2 grid; " << num_phi << " Faraday depths\n"
      << node.describe(config) << "\n";
  const CostRates rates =
      request.previous_qa.empty() ? measure_rates(config, plan) : rates_from_qa(request.previous_qa, config, plan);
  out << "rates " << rates.from << ":\n  set-up " << fixed(rates.setup_s, 2) << " s; per channel: image and CLEAN "
      << fixed(rates.image_channel_s, 3) << " s, restore " << fixed(rates.restore_channel_s, 3)
      << " s; Faraday stage " << fixed(rates.faraday_pixel_s * 1e6, 2) << " us per pixel; products created by rank 0 in "
      << fixed(rates.create_s, 2) << " s\n";
  out << "groups: " << (group > 1 ? std::to_string(ranks / group) + " of " + std::to_string(group) +
                                        " ranks, each member gridding its share of every channel's rows, the first "
                                        "keeping and writing the channels (" + plan.grouping +
                                        "); a member's time is counted as that of whole channels"
                                  : plan.grouping) << "\n\n";

  const double gpu_imaging =
      gpu ? static_cast<double>(
                cuda::DeviceImager::device_bytes(plan.geometry, plan.max_visibilities, weighting_scheme(config))) +
                clean_device_bytes(config.clean, plan.geometry.size)
          : 0;
  char line[256];
  std::snprintf(line, sizeof line, "%5s %15s %14s %12s %12s %12s %12s %12s\n", "rank", "channels", "visibilities",
                "host memory", "Faraday mem", gpu ? "GPU imaging" : "", gpu ? "GPU Faraday" : "", "est. time");
  out << line;
  double peak_bytes = 0, slowest_s = 0, gpu_peak = gpu_imaging;
  for (int r = 0; r < ranks; ++r) {
    const parallel::ChannelBlock& block = plan.imaged[static_cast<std::size_t>(r)];
    const MemoryNeeds needs = memory_needs(config, plan, r, basis);
    const MemoryPlan memory = plan_memory(needs);
    const double host = memory.process + memory.kept_heap + memory.imaging + memory.channel_data + 2 * memory.block +
                        (memory.kept_spilled ? 0.0 : memory.kept);
    const double seconds = rank_seconds(rates, block.size(), slab_pixels(r, ranks, plan.geometry));
    const auto [y0, y1] = FaradayStage::slab_rows(r, ranks, plan.geometry.size);
    const int group_rows =
        FaradayStage::group_rows(memory.faraday_group, num_chan, num_phi, plan.geometry.size, y1 - y0, 0);
    const double gpu_faraday =
        gpu && num_phi > 0 ? static_cast<double>(cuda::slab_bytes(num_phi, num_chan, group_rows * plan.geometry.size))
                           : 0;
    gpu_peak = std::max(gpu_peak, gpu_faraday);
    // Imaging is freed before the Faraday stage, which holds its row group beside the kept planes.
    const double faraday_host =
        memory.process + memory.kept_heap + (memory.kept_spilled ? 0.0 : memory.kept) + memory.faraday_group;
    peak_bytes = std::max({peak_bytes, host, faraday_host});
    slowest_s = std::max(slowest_s, seconds);
    char channels[48];
    std::snprintf(channels, sizeof channels, "[%d, %d)", plan.chan_begin + block.begin, plan.chan_begin + block.end);
    std::snprintf(line, sizeof line, "%5d %15s %14.0f %12s %12s %12s %12s %12s\n", r, channels,
                  static_cast<double>(block.size()) * needs.rows_per_channel, gb(host).c_str(),
                  gb(memory.faraday_group).c_str(), gpu ? gb(gpu_imaging).c_str() : "",
                  gpu ? gb(gpu_faraday).c_str() : "", clock_time(seconds).c_str());
    out << line;
  }
  out << "\n" << first.describe() << " (rank 0)\n";
  out << "products: " << product_summary(plan.products) << "\n";
  if (const std::string warning = resume_cubes_warning(config, plan); !warning.empty()) out << warning << "\n";
  if (num_phi > 0)
    for (const std::string& warning : FaradayStage::axis_warnings(plan.data_freq_hz, config.faraday, data_channels(plan)))
      out << warning << "\n";
  for (const std::string& line : sky_lines(plan)) out << line << "\n";
  if (gpu) out << device_plan(probe, gpu_peak);
  out << "wall time at other rank counts:";
  for (int n = 1; n <= num_chan; n *= 2) {
    const SlowestRank slowest = slowest_rank(parallel::balance_channels(uniform, n), plan.geometry);
    out << " " << n << ": " << clock_time(rank_seconds(rates, slowest.channels, slowest.slab_pixels)) << ";";
  }
  // Slurm counts memory in MiB. A quarter more memory than planned; for the time, the
  // margins that docs/benchmarks.md measured: rates timed here came to 0.6-0.7 of a
  // run, a short run's to 0.7-1.0.
  const long mem_per_cpu_mb = static_cast<long>(std::ceil(1.25 * peak_bytes / threads / (1 << 20)));
  const double margin = request.previous_qa.empty() ? 2.0 : 1.5;
  out << "\n\nsuggested: "
      << sbatch_line(ranks, node.ranks, threads, mem_per_cpu_mb, margin * slowest_s,
                     config.parallel.device == Device::gpu)
      << " "
      << (config.config_file.empty() ? std::string("CONFIG") : config.config_file) << " " << config.output.dir << "\n";
}

}  // namespace spip::pipeline
