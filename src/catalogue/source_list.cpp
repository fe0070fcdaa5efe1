// Positions from another catalogue: a FITS table or CSV with RA and Dec columns.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "spip/catalogue/source_finder.hpp"
#include "spip/common/text_case.hpp"
#include "spip/error.hpp"
#include "spip/fits/fits_table.hpp"

namespace spip::catalogue {
namespace {

const char* const ra_names[] = {"ra", "ra_deg", "ra_deg_cont", "raj2000"};
const char* const dec_names[] = {"dec", "dec_deg", "dec_deg_cont", "dej2000", "decj2000"};
const char* const id_names[] = {"component_id", "source_name", "source_id", "name", "id"};

// The index of the first of `names` among `columns` (any case), or -1.
template <std::size_t N>
long find_column(const std::vector<std::string>& columns, const char* const (&names)[N]) {
  for (const char* name : names)
    for (std::size_t k = 0; k < columns.size(); ++k)
      if (lower_case(columns[k]) == name) return static_cast<long>(k);
  return -1;
}

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  SPIP_THROW(InputError, "catalogue.sources '" + path + "': " + why);
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) {
    field.erase(0, field.find_first_not_of(" \t\r\""));
    field.erase(field.find_last_not_of(" \t\r\"") + 1);
    fields.push_back(field);
  }
  return fields;
}

// A row's number in a column, for the message when it is none.
double number(const std::string& path, const std::string& text, std::size_t row) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    refuse(path, "row " + std::to_string(row + 1) + " has '" + text + "' for a position in degrees");
  return value;
}

std::vector<SourcePosition> from_csv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> header;
  while (header.empty() && std::getline(in, line))
    if (!line.empty() && line[0] != '#') header = split(line);
  const long ra = find_column(header, ra_names), dec = find_column(header, dec_names), id = find_column(header, id_names);
  if (ra < 0 || dec < 0) refuse(path, "no RA and Dec columns in degrees (ra, ra_deg, ra_deg_cont or raj2000, and dec, ...)");
  std::vector<SourcePosition> positions;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> fields = split(line);
    if (static_cast<long>(fields.size()) <= std::max({ra, dec, id}))
      refuse(path, "row " + std::to_string(positions.size() + 1) + " has " + std::to_string(fields.size()) + " fields");
    positions.push_back({id >= 0 ? fields[static_cast<std::size_t>(id)] : "",
                         number(path, fields[static_cast<std::size_t>(ra)], positions.size()),
                         number(path, fields[static_cast<std::size_t>(dec)], positions.size())});
  }
  return positions;
}

std::vector<SourcePosition> from_fits(const std::string& path) {
  const fits::Table table = fits::read_table(path);
  std::vector<std::string> names;
  for (const fits::TableColumn& c : table.columns) names.push_back(c.name);
  const long ra = find_column(names, ra_names), dec = find_column(names, dec_names), id = find_column(names, id_names);
  if (ra < 0 || dec < 0) refuse(path, "no RA and Dec columns in degrees (ra, ra_deg, ra_deg_cont or raj2000, and dec, ...)");
  const auto degrees = [&](long column) -> const std::vector<double>& {
    const auto* values = std::get_if<std::vector<double>>(&table.columns[static_cast<std::size_t>(column)].values);
    if (!values) refuse(path, "column " + names[static_cast<std::size_t>(column)] + " does not hold numbers");
    return *values;
  };
  const std::vector<double>& ra_values = degrees(ra);
  const std::vector<double>& dec_values = degrees(dec);
  std::vector<SourcePosition> positions;
  for (std::size_t r = 0; r < ra_values.size(); ++r) {
    std::string name;
    if (id >= 0) {
      const auto& column = table.columns[static_cast<std::size_t>(id)].values;
      if (const auto* texts = std::get_if<std::vector<std::string>>(&column)) name = (*texts)[r];
      if (const auto* numbers = std::get_if<std::vector<std::int32_t>>(&column)) name = std::to_string((*numbers)[r]);
      // 64-bit integer ids (astropy's default) and real ones are read as doubles.
      if (const auto* reals = std::get_if<std::vector<double>>(&column)) {
        std::ostringstream text;
        text.precision(15);
        text << (*reals)[r];
        name = text.str();
      }
    }
    positions.push_back({name, ra_values[r], dec_values[r]});
  }
  return positions;
}

}  // namespace

std::vector<SourcePosition> read_source_positions(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) refuse(path, "no such file");
  const std::string name = lower_case(path);
  return name.ends_with(".fits") || name.ends_with(".fit") || name.ends_with(".fits.gz") ? from_fits(path)
                                                                                         : from_csv(path);
}

}  // namespace spip::catalogue
