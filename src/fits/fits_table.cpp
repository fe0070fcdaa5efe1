// FITS binary tables through CFITSIO.
#include "spip/fits/fits_table.hpp"

#include <algorithm>
#include <type_traits>

#include "fits_file.hpp"

namespace spip::fits {
namespace {

using namespace detail;

std::string format_of(const TableColumn& column) {
  return std::visit(
      [](const auto& values) -> std::string {
        using T = typename std::decay_t<decltype(values)>::value_type;
        if constexpr (std::is_same_v<T, double>) {
          return "D";
        } else if constexpr (std::is_same_v<T, float>) {
          return "E";
        } else if constexpr (std::is_same_v<T, std::int32_t>) {
          return "J";
        } else {
          std::size_t width = 1;
          for (const std::string& text : values) width = std::max(width, text.size());
          return std::to_string(width) + "A";
        }
      },
      column.values);
}

void write_column(fitsfile* fptr, int number, const TableColumn& column, int& status) {
  std::visit(
      [&](const auto& values) {
        using T = typename std::decay_t<decltype(values)>::value_type;
        if (values.empty()) return;
        if constexpr (std::is_same_v<T, double>) {
          std::vector<double> copy(values);  // CFITSIO takes non-const pointers
          fits_write_col(fptr, TDOUBLE, number, 1, 1, static_cast<LONGLONG>(copy.size()), copy.data(), &status);
        } else if constexpr (std::is_same_v<T, float>) {
          std::vector<float> copy(values);
          fits_write_col(fptr, TFLOAT, number, 1, 1, static_cast<LONGLONG>(copy.size()), copy.data(), &status);
        } else if constexpr (std::is_same_v<T, std::int32_t>) {
          std::vector<int> copy(values.begin(), values.end());
          fits_write_col(fptr, TINT, number, 1, 1, static_cast<LONGLONG>(copy.size()), copy.data(), &status);
        } else {
          std::vector<char*> texts;
          for (const std::string& text : values) texts.push_back(const_cast<char*>(text.c_str()));
          fits_write_col(fptr, TSTRING, number, 1, 1, static_cast<LONGLONG>(texts.size()), texts.data(), &status);
        }
      },
      column.values);
}

void validate(const Table& table, const std::string& path) {
  if (table.columns.empty()) invalid(path, "a table needs at least one column");
  for (const TableColumn& column : table.columns)
    if (column.rows() != table.columns.front().rows())
      invalid(path, "column " + column.name + " has " + std::to_string(column.rows()) + " rows, column " +
                        table.columns.front().name + " " + std::to_string(table.columns.front().rows()));
}

// Appends the table after the current HDU (CFITSIO's fits_create_tbl).
void write_table_hdu(const FitsFile& file, const Table& table) {
  std::vector<std::string> names, formats, units;
  for (const TableColumn& column : table.columns) {
    names.push_back(column.name);
    formats.push_back(format_of(column));
    units.push_back(column.unit);
  }
  auto pointers = [](std::vector<std::string>& texts) {
    std::vector<char*> result;
    for (std::string& text : texts) result.push_back(text.data());
    return result;
  };
  std::vector<char*> ttype = pointers(names), tform = pointers(formats), tunit = pointers(units);
  std::string extname = table.extname;
  int status = 0;
  fits_create_tbl(file.get(), BINARY_TBL, static_cast<LONGLONG>(table.columns.front().rows()),
                  static_cast<int>(table.columns.size()), ttype.data(), tform.data(), tunit.data(), extname.data(),
                  &status);
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    const std::string key = "TTYPE" + std::to_string(c + 1);
    if (!table.columns[c].description.empty())
      fits_modify_comment(file.get(), key.c_str(), table.columns[c].description.c_str(), &status);
    write_column(file.get(), static_cast<int>(c + 1), table.columns[c], status);
  }
  for (const TableKey& key : table.keys) {
    if (key.integer) {
      auto value = static_cast<long long>(key.value);
      fits_write_key(file.get(), TLONGLONG, key.name.c_str(), &value, key.comment.c_str(), &status);
    } else {
      double value = key.value;
      fits_write_key(file.get(), TDOUBLE, key.name.c_str(), &value, key.comment.c_str(), &status);
    }
  }
  for (const std::string& comment : table.comments) fits_write_comment(file.get(), comment.c_str(), &status);
  check(status, "write table " + table.extname + " to", file.path());
}

}  // namespace

const std::string& Table::unit(const std::string& name) const {
  for (const TableColumn& c : columns)
    if (c.name == name) return c.unit;
  throw_missing(name);
}

void Table::throw_missing(const std::string& name) const {
  SPIP_THROW(spip::Error, "FITS table " + extname + ": no column '" + name + "' of the type asked for");
}

std::size_t TableColumn::rows() const {
  return std::visit([](const auto& values) { return values.size(); }, values);
}

void write_table(const std::string& path, const Table& table) {
  validate(table, path);
  const std::string partial = path + ".partial";
  remove_stale(partial);
  PartialFileGuard guard(partial);
  FitsFile file = FitsFile::create(partial);
  int status = 0;
  fits_create_img(file.get(), BYTE_IMG, 0, nullptr, &status);
  check(status, "write table to", partial);
  write_table_hdu(file, table);
  file.close();
  rename_into_place(partial, path);
  guard.release();
}

void append_table(const std::string& path, const Table& table) {
  validate(table, path);
  FitsFile file = FitsFile::open(path, READWRITE);
  int status = 0;
  std::string extname = table.extname;
  if (fits_movnam_hdu(file.get(), BINARY_TBL, extname.data(), 0, &status) == 0) {
    fits_delete_hdu(file.get(), nullptr, &status);
  } else if (status == BAD_HDU_NUM) {
    status = 0;
    fits_clear_errmsg();
  }
  int hdus = 0, hdu_type = 0;
  fits_get_num_hdus(file.get(), &hdus, &status);
  fits_movabs_hdu(file.get(), hdus, &hdu_type, &status);
  check(status, "append table " + table.extname + " to", path);
  write_table_hdu(file, table);
  file.close();
}

Table read_table(const std::string& path, const std::vector<std::string>& key_names, const std::string& extname) {
  FitsFile file = FitsFile::open(path, READONLY);
  int status = 0, hdu_type = 0, columns = 0;
  if (extname.empty()) {
    fits_movabs_hdu(file.get(), 2, &hdu_type, &status);
    check(status, "find a table extension in", path);
    if (hdu_type != BINARY_TBL) SPIP_THROW(spip::Error, "FITS: '" + path + "': HDU 2 is not a binary table");
  } else {
    fits_movnam_hdu(file.get(), BINARY_TBL, const_cast<char*>(extname.c_str()), 0, &status);
    check(status, "find the " + extname + " table in", path);
  }
  LONGLONG rows = 0;
  fits_get_num_rowsll(file.get(), &rows, &status);
  fits_get_num_cols(file.get(), &columns, &status);
  Table table;
  char text[FLEN_VALUE] = {}, comment[FLEN_COMMENT] = {};
  int name_status = 0;  // other writers' tables may have no EXTNAME
  fits_read_key(file.get(), TSTRING, "EXTNAME", text, nullptr, &name_status);
  table.extname = name_status == 0 ? text : "";
  if (name_status != 0) fits_clear_errmsg();
  for (int c = 1; c <= columns && status == 0; ++c) {
    TableColumn column;
    const std::string n = std::to_string(c);
    fits_read_key(file.get(), TSTRING, ("TTYPE" + n).c_str(), text, comment, &status);
    column.name = text;
    column.description = comment;
    int unit_status = 0;
    fits_read_key(file.get(), TSTRING, ("TUNIT" + n).c_str(), text, nullptr, &unit_status);
    column.unit = unit_status == 0 ? text : "";
    if (unit_status != 0) fits_clear_errmsg();
    int type = 0;
    long repeat = 0, width = 0;
    fits_get_coltype(file.get(), c, &type, &repeat, &width, &status);
    if (type == TSTRING) {
      std::vector<std::string> values(static_cast<std::size_t>(rows), std::string(static_cast<std::size_t>(width) + 1, '\0'));
      std::vector<char*> pointers;
      for (std::string& value : values) pointers.push_back(value.data());
      if (rows > 0) fits_read_col(file.get(), TSTRING, c, 1, 1, rows, nullptr, pointers.data(), nullptr, &status);
      // Trailing blanks are not significant in FITS text (CFITSIO reads "" back as " ").
      for (std::string& value : values) {
        value.resize(std::char_traits<char>::length(value.c_str()));
        value.erase(value.find_last_not_of(' ') + 1);
      }
      column.values = std::move(values);
    } else if (type == TLONG || type == TSHORT) {
      std::vector<int> values(static_cast<std::size_t>(rows));
      if (rows > 0) fits_read_col(file.get(), TINT, c, 1, 1, rows, nullptr, values.data(), nullptr, &status);
      column.values = std::vector<std::int32_t>(values.begin(), values.end());
    } else {
      std::vector<double> values(static_cast<std::size_t>(rows));
      if (rows > 0) fits_read_col(file.get(), TDOUBLE, c, 1, 1, rows, nullptr, values.data(), nullptr, &status);
      column.values = std::move(values);
    }
    table.columns.push_back(std::move(column));
  }
  for (const std::string& name : key_names) {
    TableKey key{name, 0, ""};
    fits_read_key(file.get(), TDOUBLE, name.c_str(), &key.value, comment, &status);
    key.comment = comment;
    table.keys.push_back(key);
  }
  check(status, "read the table of", path);
  return table;
}

}  // namespace spip::fits
