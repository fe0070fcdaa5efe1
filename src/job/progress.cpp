#include "spip/job/progress.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "spip/error.hpp"
#include "spip/job/qa.hpp"
#include "spip/job/text_file.hpp"

namespace spip::pipeline {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// Written with the markers: their records are ChannelMarkers of this QA version.
// Inputs named where they lie since journals 2, so that a moved input is still the same one.
const std::string marker_format = "spip progress journals 2, qa version " + std::to_string(qa_version);

// Settings that do not change the products: how many threads, how long the allocation
// is (a requeued job passes it anew), how often progress is synced, and paths that
// name the same inputs and folder in other words (the inputs themselves are compared
// by their fingerprint).
constexpr const char* settings_without_effect[] = {"parallel.threads", "parallel.time_limit",
                                                   "output.checkpoint_interval", "input.ms", "output.dir"};

// "section.key" -> its values, from the text to_ini() writes.
std::map<std::string, std::string> settings(const std::string& ini) {
  std::map<std::string, std::string> values;
  std::istringstream lines(ini);
  std::string section;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const std::size_t equals = line.find(" = ");
    if (equals == std::string::npos) continue;
    std::string& value = values[section + "." + line.substr(0, equals)];
    value += (value.empty() ? "" : ", ") + line.substr(equals + 3);
  }
  return values;
}

// What a setting changes, for a run that finds markers made with another value: the
// channels (they are imaged again), only the Faraday stage and the catalogue (which
// every run makes anew from the channels, faraday.ionosphere excepted, which rotates
// the visibilities), or nothing in the products.
enum class Effect { channels, faraday_stage, none };
Effect effect_of(const std::string& key) {
  if (std::find(std::begin(settings_without_effect), std::end(settings_without_effect), key) !=
      std::end(settings_without_effect))
    return Effect::none;
  if ((key.starts_with("faraday.") && key != "faraday.ionosphere") || key.starts_with("catalogue."))
    return Effect::faraday_stage;
  return Effect::channels;
}

// "clean.niter 3000 -> 50" for every setting that differs, of the effect asked for.
std::string differences(const std::string& before, const std::string& now, Effect effect) {
  const auto a = settings(before), b = settings(now);
  std::map<std::string, std::string> keys;
  for (const auto& [key, value] : a) keys[key];
  for (const auto& [key, value] : b) keys[key];
  std::string listed;
  for (const auto& [key, unused] : keys) {
    const auto old_value = a.find(key), new_value = b.find(key);
    const std::string was = old_value == a.end() ? "(none)" : old_value->second;
    const std::string is = new_value == b.end() ? "(none)" : new_value->second;
    if (was == is) continue;
    if (effect_of(key) != effect) continue;
    listed += (listed.empty() ? "" : ", ") + key + " " + was + " -> " + is;
  }
  return listed;
}

// A fingerprint's input line, "input rows N at PATH": what identifies the input (its
// rows; its files follow), and where it lies, which may change: an input moved or staged
// to another disk with its files' sizes and times kept is the same input.
bool is_input(const std::string& line) { return line.rfind("input ", 0) == 0; }
std::string identity(const std::string& line) { return line.substr(0, line.find(" at ")); }
std::string place(const std::string& line) {
  const std::size_t at = line.find(" at ");
  return at == std::string::npos ? line : line.substr(at + 4);
}
// A file line's name, "  NAME SIZE TIME".
std::string name_in(const std::string& line) { return line.substr(2, line.find(' ', 2) - 2); }

// Which input changed, and how, from the first line of the fingerprints that differs.
std::string first_change(const std::string& before, const std::string& now) {
  std::istringstream a(before), b(now);
  std::string input;
  for (std::string x, y;;) {
    const bool more_a = static_cast<bool>(std::getline(a, x)), more_b = static_cast<bool>(std::getline(b, y));
    if (!more_a && !more_b) return "";
    if (!more_a || !more_b) return "the list of inputs changed";
    if (is_input(y)) input = place(y);
    if (x == y) continue;
    if (is_input(x) != is_input(y))
      return is_input(y) ? "the list of inputs changed" : input + " changed (its list of table files)";
    if (is_input(y)) {
      if (identity(x) == identity(y)) continue;  // moved
      return input + " changed (its row count)";
    }
    if (name_in(x) != name_in(y)) return input + " changed (its list of table files)";
    return input + " changed (" + name_in(y) + ": size or modification time)";
  }
}

// "NOW (was BEFORE)" for each input that lies elsewhere than when the markers were written.
std::string moved_inputs(const std::string& before, const std::string& now) {
  std::istringstream a(before), b(now);
  std::string moved;
  for (std::string x, y; std::getline(a, x) && std::getline(b, y);)
    if (is_input(x) && is_input(y) && place(x) != place(y))
      moved += (moved.empty() ? "" : ", ") + place(y) + " (was " + place(x) + ")";
  return moved;
}

}  // namespace

std::string input_fingerprint(const std::vector<std::string>& ms_paths, const std::vector<std::int64_t>& rows,
                              const std::vector<std::string>& files_read) {
  std::ostringstream out;
  // A file that vanishes meanwhile has no size or time: a change like any other.
  std::error_code error;
  const auto describe = [&](const fs::path& file, const std::string& name) {
    out << "  " << name << " " << fs::file_size(file, error) << " "
        << fs::last_write_time(file, error).time_since_epoch().count() << "\n";
  };
  for (std::size_t k = 0; k < ms_paths.size(); ++k) {
    const fs::path ms = fs::canonical(ms_paths[k]);
    out << "input rows " << rows[k] << " at " << ms.string() << "\n";
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(ms, fs::directory_options::follow_directory_symlink))
      if (entry.path().filename() != "table.lock" && entry.is_regular_file(error)) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) describe(file, fs::relative(file, ms).string());
  }
  for (const std::string& path : files_read) {
    const fs::path file = fs::canonical(path);
    out << "input rows 0 at " << file.string() << "\n";
    describe(file, "file");
  }
  return out.str();
}

ChannelProgress::ChannelProgress(std::string dir, std::string config_text, std::string inputs, int rank)
    : dir_(std::move(dir)),
      config_text_(std::move(config_text)),
      inputs_(std::move(inputs)),
      rank_(rank) {}

ChannelProgress::~ChannelProgress() {
  if (journal_) std::fclose(journal_);
}

namespace {

// The whole lines of every journal in the folder, journal after journal by name.
std::string read_journals(const std::string& dir) {
  std::vector<fs::path> files;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error))
    if (it->path().filename().string().starts_with("rank-") && it->path().extension() == ".jsonl")
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  std::string lines;
  for (const fs::path& file : files) {
    const std::string text = read_text(file.string());
    lines += text.substr(0, text.rfind('\n') + 1);  // none where there is no newline
  }
  return lines;
}

}  // namespace

std::string ChannelProgress::journals() const {
  const std::lock_guard lock(mutex_);
  load();
  return lines_;
}

void ChannelProgress::adopt(const std::string& lines) const {
  const std::lock_guard lock(mutex_);
  std::string().swap(lines_);  // what was read is handed on: tens of MB at 65,536 channels
  parse(lines);
  loaded_ = true;
}

void ChannelProgress::load() const {
  if (loaded_) return;
  loaded_ = true;
  lines_ = read_journals(dir_);
  parse(lines_);
}

void ChannelProgress::parse(const std::string& lines) const {
  records_.clear();
  restored_.clear();
  for (std::size_t begin = 0, end; (end = lines.find('\n', begin)) != std::string::npos; begin = end + 1) {
    const json line = json::parse(lines.begin() + static_cast<std::ptrdiff_t>(begin),
                                  lines.begin() + static_cast<std::ptrdiff_t>(end), nullptr, false);
    if (!line.is_object() || !line.contains("channel") || !line["channel"].is_number_integer()) continue;
    const int channel = line["channel"].get<int>();
    if (line.contains("record") && line["record"].is_object()) records_[channel] = line["record"].dump();
    if (line.contains("restored_peak"))  // NaN is written as null
      restored_[channel] = line["restored_peak"].is_number() ? line["restored_peak"].get<double>()
                                                               : std::numeric_limits<double>::quiet_NaN();
  }
}

void ChannelProgress::append(const std::string& line) const {
  const std::lock_guard lock(mutex_);
  if (!journal_) {
    char name[32];
    std::snprintf(name, sizeof name, "rank-%06d.jsonl", rank_);
    const std::string path = (fs::path(dir_) / name).string();
    journal_ = std::fopen(path.c_str(), "a+");
    if (!journal_) SPIP_THROW(InputError, path + ": cannot write: " + std::strerror(errno));
    // A line a kill cut short is ended first, or the next one would join it and be lost.
    // (A stream read must be followed by a seek before it is written.)
    const bool cut_short = std::fseek(journal_, -1, SEEK_END) == 0 && std::fgetc(journal_) != '\n';
    std::fseek(journal_, 0, SEEK_END);
    if (cut_short) std::fputc('\n', journal_);
  }
  // A line whose write fails may be cut short: unread, as a kill's would be.
  if (std::fputs((line + "\n").c_str(), journal_) == EOF || std::fflush(journal_) != 0)
    SPIP_THROW(InputError, dir_ + ": cannot write rank " + std::to_string(rank_) + "'s progress: " + std::strerror(errno));
}

ResumeDecision ChannelProgress::decide(const std::vector<std::string>& partial_cubes) const {
  ResumeDecision decision;
  if (!fs::exists(dir_)) return decision;
  {
    const std::lock_guard lock(mutex_);
    load();
    decision.channels_done = static_cast<int>(records_.size());
  }
  const std::string made_from = read_text((fs::path(dir_) / "inputs.txt").string());
  const std::string config_before = read_text((fs::path(dir_) / "config.ini").string());
  const std::string format = made_from.substr(0, made_from.find('\n'));
  const std::string inputs_before = made_from.substr(std::min(made_from.size(), format.size() + 1));
  if (format != marker_format) {
    decision.reason = "they were written by an older spip";
    return decision;
  }
  if (const std::string changed = differences(config_before, config_text_, Effect::channels); !changed.empty()) {
    decision.reason = "the settings changed: " + changed;
    return decision;
  }
  if (const std::string changed = first_change(inputs_before, inputs_); !changed.empty()) {
    decision.reason = changed + " since they were written";
    return decision;
  }
  for (const std::string& cube : partial_cubes)
    if (!fs::exists(cube)) {
      decision.reason = cube + " is missing";
      return decision;
    }
  decision.resume = true;
  decision.reason = "same inputs and settings";
  if (const std::string moved = moved_inputs(inputs_before, inputs_); !moved.empty())
    decision.reason += "; inputs found elsewhere: " + moved;
  if (const std::string changed = differences(config_before, config_text_, Effect::faraday_stage); !changed.empty())
    decision.reason += "; changed for the Faraday stage and catalogue only, which the run makes anew: " + changed;
  if (const std::string changed = differences(config_before, config_text_, Effect::none); !changed.empty())
    decision.reason += "; changed without effect on the products: " + changed;
  return decision;
}

void ChannelProgress::start_fresh() const {
  const std::lock_guard lock(mutex_);
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  write_text_atomically((fs::path(dir_) / "config.ini").string(), config_text_);
  write_text_atomically((fs::path(dir_) / "inputs.txt").string(), marker_format + "\n" + inputs_);
  lines_.clear();
  records_.clear();
  restored_.clear();
  loaded_ = true;  // nothing earlier counts
}

bool ChannelProgress::done(int channel) const {
  const std::lock_guard lock(mutex_);
  load();
  return records_.contains(channel);
}

std::string ChannelProgress::record(int channel) const {
  const std::lock_guard lock(mutex_);
  load();
  const auto found = records_.find(channel);
  return found == records_.end() ? "" : found->second;
}

void ChannelProgress::mark_done(int channel, const std::string& record) const {
  append("{\"channel\":" + std::to_string(channel) + ",\"record\":" + record + "}");  // a record is one JSON object
}

bool ChannelProgress::restored(int channel) const {
  const std::lock_guard lock(mutex_);
  load();
  return restored_.contains(channel);
}

double ChannelProgress::restored_peak(int channel) const {
  const std::lock_guard lock(mutex_);
  load();
  return restored_.at(channel);
}

void ChannelProgress::mark_restored(int channel, double restored_peak) const {
  json line;
  line["channel"] = channel;
  line["restored_peak"] = restored_peak;
  append(line.dump());
}

void ChannelProgress::remove() const {
  const std::lock_guard lock(mutex_);
  if (journal_) std::fclose(journal_);
  journal_ = nullptr;
  fs::remove_all(dir_);
}

Checkpoint::Checkpoint(std::function<void()> sync, double interval_s)
    : sync_(std::move(sync)), interval_s_(interval_s) {}

Checkpoint::~Checkpoint() {
  try {
    flush();
  } catch (...) {  // the error that is unwinding the run is the one to report
  }
}

void Checkpoint::mark_after_sync(std::function<void()> marker) {
  waiting_.push_back(std::move(marker));
  if (since_sync_.seconds() >= interval_s_) flush();
}

void Checkpoint::flush() {
  if (waiting_.empty()) return;
  sync_();
  for (const auto& marker : waiting_) marker();
  waiting_.clear();
  since_sync_ = Stopwatch();
}

}  // namespace spip::pipeline
