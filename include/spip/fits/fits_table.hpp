#pragma once
// FITS binary tables, for catalogues: one table extension after an empty primary
// HDU, a unit (TUNIT) and a description (the TTYPE card's comment) per column, as
// astropy, TOPCAT and CARTA read them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace spip::fits {

struct TableColumn {
  std::string name;         // TTYPEn
  std::string unit;         // TUNITn; empty: dimensionless
  std::string description;  // comment of TTYPEn
  // Written as 'D' (float64), 'E' (float32), 'J' (int32) or 'nA' (text of the longest value).
  std::variant<std::vector<double>, std::vector<float>, std::vector<std::int32_t>, std::vector<std::string>> values;

  std::size_t rows() const;
};

struct TableKey {
  std::string name;  // at most 8 characters
  double value = 0;
  std::string comment;
  bool integer = false;  // written as an integer, as readers expect of counts (NCHAN)
};

struct Table {
  std::string extname;
  std::vector<TableColumn> columns;
  std::vector<TableKey> keys;          // keywords of the table's header
  std::vector<std::string> comments;   // COMMENT cards of the table's header

  // The values of the column `name` as T; throws spip::Error if there is none of that type.
  // The TUNIT of the column `name`; throws spip::Error if there is no such column.
  const std::string& unit(const std::string& name) const;

  template <class T>
  const std::vector<T>& values(const std::string& name) const {
    for (const TableColumn& c : columns)
      if (c.name == name && std::holds_alternative<std::vector<T>>(c.values)) return std::get<std::vector<T>>(c.values);
    throw_missing(name);
  }

 private:
  [[noreturn]] void throw_missing(const std::string& name) const;
};

// Writes the table under a temporary name and renames it when complete. Every column
// must have the same number of rows.
void write_table(const std::string& path, const Table& table);

// Appends the table as a new extension of the existing FITS file `path`, replacing an
// extension of the same EXTNAME left by an interrupted earlier call.
void append_table(const std::string& path, const Table& table);

// The first table extension of `path` (or the binary table named `extname`, wherever it
// is), its 'D', 'E', 'J', 'I' and 'A' columns (numbers as double or int32), and its keys
// from `key_names`.
Table read_table(const std::string& path, const std::vector<std::string>& key_names = {},
                 const std::string& extname = "");

}  // namespace spip::fits
