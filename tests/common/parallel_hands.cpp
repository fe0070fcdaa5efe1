// casacore side of copy_parallel_hands; compiled as C++17.
#include "parallel_hands.hpp"

#include <casacore/casa/Arrays/Array.h>
#include <casacore/casa/Arrays/ArrayMath.h>
#include <casacore/casa/Arrays/Matrix.h>
#include <casacore/casa/Arrays/Vector.h>
#include <casacore/tables/Tables/ArrColDesc.h>
#include <casacore/tables/Tables/ArrayColumn.h>
#include <casacore/tables/Tables/ScalarColumn.h>
#include <casacore/tables/Tables/SetupNewTab.h>
#include <casacore/tables/Tables/Table.h>
#include <casacore/tables/Tables/TableCopy.h>
#include <casacore/tables/Tables/TableDesc.h>

#include <algorithm>
#include <string>
#include <vector>

namespace spip::test {
namespace {

namespace cc = casacore;

// Correlation slots 0 and 3 (XX and YY) of an array whose first axis is the correlations.
template <typename T>
cc::Array<T> parallel_hands(const cc::Array<T>& all) {
  cc::IPosition end = all.shape() - 1;
  cc::IPosition start(all.ndim(), 0);
  end[0] = 3;
  const cc::IPosition stride = [&] {
    cc::IPosition s(all.ndim(), 1);
    s[0] = 3;
    return s;
  }();
  return all(start, end, stride).copy();
}

// The column described again with 2 correlations (a fixed shape cannot be changed).
template <typename T>
void with_two_correlations(cc::TableDesc& desc, const std::string& name) {
  const cc::ColumnDesc old = desc.columnDesc(name);
  cc::IPosition shape = old.shape();
  shape[0] = 2;
  cc::ArrayColumnDesc<T> column(name, old.comment(), shape, cc::ColumnDesc::FixedShape);
  column.rwKeywordSet() = old.keywordSet();
  desc.removeColumn(name);
  desc.addColumn(column);
}

template <typename T>
void copy_column(const cc::Table& in, cc::Table& out, const std::string& name) {
  cc::ArrayColumn<T>(out, name).putColumn(parallel_hands(cc::ArrayColumn<T>(in, name).getColumn()));
}

}  // namespace

void copy_parallel_hands(const std::string& source, const std::string& out, bool circular) {
  const cc::Table in(source);
  // Every column on the default storage manager: the tiled hypercolumns fix 4 correlations.
  cc::TableDesc desc(in.tableDesc(), "", "", cc::TableDesc::Scratch);
  for (const cc::String& name : desc.hypercolumnNames()) desc.removeHypercolumnDesc(name);
  const std::vector<std::string> per_correlation = {"DATA", "FLAG", "WEIGHT", "SIGMA"};
  with_two_correlations<cc::Complex>(desc, "DATA");
  with_two_correlations<bool>(desc, "FLAG");
  with_two_correlations<float>(desc, "WEIGHT");
  with_two_correlations<float>(desc, "SIGMA");
  cc::SetupNewTable setup(out, desc, cc::Table::New);
  cc::Table copy(setup, in.nrow());
  for (const cc::String& name : desc.columnNames()) {
    const bool correlations =
        std::find(per_correlation.begin(), per_correlation.end(), std::string(name)) != per_correlation.end();
    const bool defined = in.nrow() > 0 && cc::TableColumn(in, name).isDefined(0);
    if (!correlations && defined) cc::TableCopy::copyColumnData(in, name, copy, name);
  }
  copy_column<cc::Complex>(in, copy, "DATA");
  copy_column<bool>(in, copy, "FLAG");
  copy_column<float>(in, copy, "WEIGHT");
  copy_column<float>(in, copy, "SIGMA");
  cc::TableCopy::copySubTables(copy, in);
  copy.flush();

  cc::Table polarization(out + "/POLARIZATION", cc::Table::Update);
  cc::Vector<int> corr_type(2);
  corr_type(0) = circular ? 5 : 9;   // RR or XX
  corr_type(1) = circular ? 8 : 12;  // LL or YY
  cc::Matrix<int> corr_product(2, 2, 0);
  corr_product(0, 1) = corr_product(1, 1) = 1;
  cc::ArrayColumn<int>(polarization, "CORR_TYPE").put(0, corr_type);
  cc::ArrayColumn<int>(polarization, "CORR_PRODUCT").put(0, corr_product);
  cc::ScalarColumn<int>(polarization, "NUM_CORR").put(0, 2);
}

}  // namespace spip::test
