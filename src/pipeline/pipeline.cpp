#include "spip/pipeline/pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <omp.h>
#include <sstream>

#include "spip/cuda/device.hpp"
#include "spip/error.hpp"
#include "spip/ms/ms_reader.hpp"
#include "spip/parallel/decomposition.hpp"
#include "spip/parallel/mpi_context.hpp"
#include "spip/pipeline/log.hpp"

namespace spip::pipeline {
namespace {

namespace fs = std::filesystem;
constexpr double speed_of_light = 299792458.0;

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << value;
  return out.str();
}

// ---- plan ------------------------------------------------------------------

struct Plan {
  std::vector<ms::MsReader> readers;
  int chan_begin = 0, chan_end = 0;              // imaged range of the band
  std::vector<parallel::ChannelBlock> blocks;    // per rank, relative to chan_begin
  std::string backend;                           // "cpu" or "gpu <index>"
};

std::vector<ms::MsReader> open_inputs(const Config& config) {
  ms::Selection selection;
  selection.column = config.input.column;
  selection.field = config.input.field;
  selection.spw = config.input.spw;
  selection.row_chunk = static_cast<std::size_t>(config.input.row_chunk);
  std::vector<ms::MsReader> readers;
  std::vector<ms::MsInfo> infos;
  for (const std::string& path : config.input.ms) {
    readers.emplace_back(path, selection);
    infos.push_back(readers.back().info());
  }
  ms::require_same_channels(infos);
  return readers;
}

// Unflagged visibilities per imaged channel over every input MS: the cost that the
// channel blocks balance.
std::vector<std::int64_t> channel_cost(const std::vector<ms::MsReader>& readers, int begin, int end) {
  std::vector<std::int64_t> cost(static_cast<std::size_t>(end - begin), 0);
  for (const ms::MsReader& reader : readers) {
    const std::vector<std::int64_t> counts = reader.unflagged_per_channel();
    for (int c = begin; c < end; ++c) cost[c - begin] += counts[c];
  }
  return cost;
}

std::string choose_backend(Device requested, int local_rank, const Log& log) {
  if (requested == Device::cpu) return "cpu";
  const cuda::DeviceProbe probe = cuda::probe_devices();
  if (probe.devices.empty()) {
    if (requested == Device::gpu)
      SPIP_THROW(ConfigError, "parallel.device = gpu but no usable GPU: " + probe.reason);
    log.info("no GPU (" + probe.reason + "); using the CPU backend");
    return "cpu";
  }
  const cuda::DeviceInfo& device = probe.devices[local_rank % probe.devices.size()];
  log.info("local rank " + std::to_string(local_rank) + " -> GPU " + std::to_string(device.index) +
           " (" + device.name + ", " + std::to_string(device.memory_bytes >> 20) + " MiB)");
  return "gpu " + std::to_string(device.index);
}

Plan make_plan(const Config& config, const parallel::MpiContext& mpi, const Log& log) {
  Plan plan;
  plan.readers = open_inputs(config);
  const ms::MsInfo& info = plan.readers.front().info();
  const int band = info.num_channels();
  plan.chan_begin = config.input.channel_begin;
  plan.chan_end = config.input.channel_end < 0 ? band : config.input.channel_end;
  if (plan.chan_end > band || plan.chan_begin >= plan.chan_end)
    SPIP_THROW(InputError, info.path + ": input.channel_begin/channel_end = [" +
                               std::to_string(plan.chan_begin) + ", " + std::to_string(plan.chan_end) +
                               ") is outside the band of " + std::to_string(band) + " channels");
  for (const ms::MsReader& reader : plan.readers)
    log.root("input " + reader.info().path + ": " + std::to_string(reader.info().num_rows) + " rows, " +
             std::to_string(band) + " channels, correlations [" + reader.info().stokes_summary() + "]");
  for (int s = 0; s < ms::num_stokes; ++s)
    if (!info.stokes_determined[s])
      log.root(std::string("Stokes ") + "IQUV"[s] + " is not determined by the correlations; its products are skipped");
  plan.blocks = parallel::balance_channels(channel_cost(plan.readers, plan.chan_begin, plan.chan_end), mpi.size());
  plan.backend = choose_backend(config.parallel.device, mpi.local_rank(), log);
  return plan;
}

// ---- per-channel work ----------------------------------------------------------

// Per-channel QA, flattened for the gather: one record of these fields per channel.
struct ChannelQa {
  double channel, freq_hz, rank, visibilities, flagged_fraction, weight_sum, max_uv_wavelengths, read_s;
  static constexpr int fields = 8;
};

ChannelQa measure_channel(const Plan& plan, int channel, int rank) {
  ChannelQa qa{};
  qa.channel = channel;
  qa.rank = rank;
  double samples = 0;
  const Stopwatch watch;
  for (const ms::MsReader& reader : plan.readers) {
    const ms::VisBlock block = reader.read(channel, channel + 1);
    qa.freq_hz = block.freq_hz[0];
    const double inv_lambda = block.freq_hz[0] / speed_of_light;
    for (std::size_t r = 0; r < block.num_rows(); ++r) {
      const float weight = block.weight[block.index(r, 0, ms::stokes_i)];
      samples += 1;
      if (weight <= 0) continue;
      qa.visibilities += 1;
      qa.weight_sum += weight;
      const double uv = std::hypot(block.uvw_m[3 * r], block.uvw_m[3 * r + 1]) * inv_lambda;
      qa.max_uv_wavelengths = std::max(qa.max_uv_wavelengths, uv);
    }
  }
  qa.flagged_fraction = samples > 0 ? 1.0 - qa.visibilities / samples : 1.0;
  qa.read_s = watch.seconds();
  return qa;
}

// ---- products ---------------------------------------------------------------------

// Written to a temporary name and renamed, like every product.
void write_qa_json(const std::string& path, const std::vector<double>& records, const Plan& plan,
                   const std::vector<double>& rank_seconds) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial);
    out << "{\n  \"spip_qa_version\": 1,\n  \"channels\": [\n";
    const std::size_t count = records.size() / ChannelQa::fields;
    for (std::size_t k = 0; k < count; ++k) {
      const double* q = &records[k * ChannelQa::fields];
      out << "    {\"channel\": " << static_cast<int>(q[0]) << ", \"freq_hz\": " << fixed(q[1], 1)
          << ", \"rank\": " << static_cast<int>(q[2]) << ", \"visibilities\": " << static_cast<long long>(q[3])
          << ", \"flagged_fraction\": " << fixed(q[4], 6) << ", \"weight_sum\": " << fixed(q[5], 3)
          << ", \"max_uv_wavelengths\": " << fixed(q[6], 3) << ", \"read_s\": " << fixed(q[7], 6) << "}"
          << (k + 1 < count ? "," : "") << "\n";
    }
    out << "  ],\n  \"ranks\": [\n";
    for (std::size_t r = 0; r < plan.blocks.size(); ++r)
      out << "    {\"rank\": " << r << ", \"channel_begin\": " << plan.chan_begin + plan.blocks[r].begin
          << ", \"channel_end\": " << plan.chan_begin + plan.blocks[r].end
          << ", \"read_s\": " << fixed(rank_seconds[r], 6) << "}" << (r + 1 < plan.blocks.size() ? "," : "")
          << "\n";
    out << "  ]\n}\n";
    if (!out) SPIP_THROW(Error, partial + ": write failed");
  }
  fs::rename(partial, path);
}

}  // namespace

Products run(const Config& config, const parallel::MpiContext& mpi, const Log& log) {
  const Stopwatch total;
  if (config.parallel.threads > 0) omp_set_num_threads(config.parallel.threads);
  log.info("using " + std::to_string(omp_get_max_threads()) + " OpenMP thread(s)");
  Plan plan = make_plan(config, mpi, log);
  const parallel::ChannelBlock mine = plan.blocks[static_cast<std::size_t>(mpi.rank())];
  if (mine.size() == 0)
    log.info("more ranks than channels: this rank has no channels and idles");
  else
    log.info("channels [" + std::to_string(plan.chan_begin + mine.begin) + ", " +
             std::to_string(plan.chan_begin + mine.end) + ") on " + plan.backend);

  const std::string dir = config.output.dir;
  if (mpi.is_root()) fs::create_directories(dir);

  std::vector<double> records;
  const Stopwatch reading;
  const int imaged = plan.chan_end - plan.chan_begin;
  for (int c = mine.begin; c < mine.end; ++c) {
    const ChannelQa qa = measure_channel(plan, plan.chan_begin + c, mpi.rank());
    const double* fields = &qa.channel;
    records.insert(records.end(), fields, fields + ChannelQa::fields);
    if (mpi.is_root()) {
      // Rank 0's own progress stands for the job's: blocks are balanced.
      const int done = c - mine.begin + 1;
      const double rate = done / reading.seconds();
      log.info("channel " + std::to_string(done) + "/" + std::to_string(mine.size()) + " of rank 0 (" +
               std::to_string(imaged) + " in the job), " + fixed(rate, 2) + " channels/s, ETA " +
               fixed((mine.size() - done) / rate, 1) + " s");
    }
  }
  const double read_s = reading.seconds();
  log.info("read " + std::to_string(mine.size()) + " channels in " + fixed(read_s, 3) + " s");

  const std::vector<double> all_records = mpi.gather_to_root(records);
  const std::vector<double> rank_seconds = mpi.gather_to_root({read_s});
  Products products;
  if (mpi.is_root()) {
    const std::string qa_path = (fs::path(dir) / (config.output.prefix + "-qa.json")).string();
    write_qa_json(qa_path, all_records, plan, rank_seconds);
    products.paths.push_back(qa_path);
  }
  log.root("done in " + fixed(total.seconds(), 3) + " s");
  return products;
}

}  // namespace spip::pipeline
