#include "progress.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "products.hpp"
#include "spip/error.hpp"

namespace spip::pipeline {
namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

ChannelProgress::ChannelProgress(const std::string& output_dir, const std::string& prefix, std::string config_text)
    : dir_((fs::path(output_dir) / ("." + prefix + ".progress")).string()), config_text_(std::move(config_text)) {}

std::string ChannelProgress::marker(int channel) const {
  char name[32];
  std::snprintf(name, sizeof name, "channel-%06d", channel);
  return (fs::path(dir_) / name).string();
}

std::string ChannelProgress::restored_marker(int channel) const { return marker(channel) + ".restored"; }

bool ChannelProgress::resumable(const std::vector<std::string>& partial_cubes) const {
  if (read_text((fs::path(dir_) / "config.ini").string()) != config_text_) return false;
  for (const std::string& cube : partial_cubes)
    if (!fs::exists(cube)) return false;
  return true;
}

void ChannelProgress::start_fresh() const {
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  write_text_atomically((fs::path(dir_) / "config.ini").string(), config_text_);
}

bool ChannelProgress::done(int channel) const { return fs::exists(marker(channel)); }

std::vector<double> ChannelProgress::record(int channel) const {
  // stod reads the nan and inf that operator<< writes; operator>> does not.
  std::istringstream in(read_text(marker(channel)));
  std::vector<double> values;
  for (std::string token; in >> token;) values.push_back(std::stod(token));
  return values;
}

void ChannelProgress::mark_done(int channel, const std::vector<double>& record) const {
  std::ostringstream out;
  out.precision(17);
  for (double v : record) out << v << "\n";
  write_text_atomically(marker(channel), out.str());
}

bool ChannelProgress::restored(int channel) const { return fs::exists(restored_marker(channel)); }

double ChannelProgress::restored_peak(int channel) const { return std::stod(read_text(restored_marker(channel))); }

void ChannelProgress::mark_restored(int channel, double restored_peak) const {
  std::ostringstream out;
  out.precision(17);
  out << restored_peak << "\n";
  write_text_atomically(restored_marker(channel), out.str());
}

void ChannelProgress::remove() const { fs::remove_all(dir_); }

}  // namespace spip::pipeline
