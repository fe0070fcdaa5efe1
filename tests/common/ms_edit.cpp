// casacore side of the MS edits; compiled as C++17.
#include "ms_edit.hpp"

#include <casacore/casa/Arrays/Array.h>
#include <casacore/casa/Arrays/ArrayMath.h>
#include <casacore/tables/Tables/ArrayColumn.h>
#include <casacore/tables/Tables/ScalarColumn.h>
#include <casacore/tables/Tables/Table.h>
#include <casacore/tables/Tables/TableCopy.h>

namespace spip::test {
namespace {

namespace cc = casacore;

cc::Table open_for_update(const std::string& ms) { return cc::Table(ms, cc::Table::Update); }

// Changes one element of an array cell in place.
template <typename T, typename Change>
void edit_cell(const std::string& ms, const char* column, std::size_t row, Change change) {
  cc::Table table = open_for_update(ms);
  cc::ArrayColumn<T> cells(table, column);
  cc::Array<T> cell = cells(row);
  change(cell);
  cells.put(row, cell);
}

}  // namespace

std::vector<std::size_t> cross_correlation_rows(const std::string& ms, std::size_t count) {
  const cc::Table table(ms);
  const cc::ScalarColumn<int> ant1(table, "ANTENNA1"), ant2(table, "ANTENNA2");
  std::vector<std::size_t> rows;
  for (cc::rownr_t r = 0; r < table.nrow() && rows.size() < count; ++r)
    if (ant1(r) != ant2(r)) rows.push_back(r);
  return rows;
}

void set_data(const std::string& ms, const Sample& sample, std::complex<float> value) {
  edit_cell<cc::Complex>(ms, "DATA", sample.row, [&](cc::Array<cc::Complex>& cell) {
    cell(cc::IPosition(2, sample.corr, sample.chan)) = value;
  });
}

void set_flag(const std::string& ms, const Sample& sample) {
  edit_cell<bool>(ms, "FLAG", sample.row,
                  [&](cc::Array<bool>& cell) { cell(cc::IPosition(2, sample.corr, sample.chan)) = true; });
}

void set_flag_all_channels(const std::string& ms, std::size_t row, int corr) {
  edit_cell<bool>(ms, "FLAG", row, [&](cc::Array<bool>& cell) {
    for (int c = 0; c < cell.shape()(1); ++c) cell(cc::IPosition(2, corr, c)) = true;
  });
}

std::size_t set_flag_row_every(const std::string& ms, std::size_t every) {
  cc::Table table = open_for_update(ms);
  cc::ScalarColumn<bool> flag_row(table, "FLAG_ROW");
  std::size_t count = 0;
  for (cc::rownr_t r = 0; r < table.nrow(); r += every, ++count) flag_row.put(r, true);
  return count;
}

void set_weight(const std::string& ms, std::size_t row, int corr, float value) {
  edit_cell<float>(ms, "WEIGHT", row, [&](cc::Array<float>& cell) { cell(cc::IPosition(1, corr)) = value; });
}

void scale_data(const std::string& ms, float factor) {
  cc::Table table = open_for_update(ms);
  cc::ArrayColumn<cc::Complex> data(table, "DATA");
  cc::Array<cc::Complex> all = data.getColumn();
  all *= cc::Complex(factor, 0.0f);
  data.putColumn(all);
}

void scale_correlation(const std::string& ms, int corr, float factor) {
  cc::Table table = open_for_update(ms);
  cc::ArrayColumn<cc::Complex> data(table, "DATA");
  cc::Array<cc::Complex> all = data.getColumn();  // [corr][chan][row]
  const cc::IPosition shape = all.shape();
  for (ssize_t row = 0; row < shape[2]; ++row)
    for (ssize_t chan = 0; chan < shape[1]; ++chan) all(cc::IPosition(3, corr, chan, row)) *= factor;
  data.putColumn(all);
}

void append_as_field(const std::string& ms, const std::string& other) {
  cc::Table fields(ms + "/FIELD", cc::Table::Update);
  const cc::Table other_fields(other + "/FIELD");
  const cc::rownr_t field = fields.nrow();
  fields.addRow();
  cc::TableCopy::copyRows(fields, other_fields, field, 0, 1);
  cc::Table rows = open_for_update(ms);
  const cc::Table other_rows(other);
  const cc::rownr_t first = rows.nrow();
  rows.addRow(other_rows.nrow());
  cc::TableCopy::copyRows(rows, other_rows, first, 0, other_rows.nrow());
  cc::ScalarColumn<int> field_id(rows, "FIELD_ID");
  for (cc::rownr_t r = first; r < rows.nrow(); ++r) field_id.put(r, static_cast<int>(field));
}

}  // namespace spip::test
