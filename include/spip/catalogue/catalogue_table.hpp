#pragma once
// The polarised-source catalogue as a FITS binary table and as CSV, with one set of
// column names, units and descriptions for both (docs/products.md lists them).
#include <string>
#include <vector>

#include "spip/catalogue/source_finder.hpp"
#include "spip/fits/fits_table.hpp"

namespace spip::catalogue {

fits::Table catalogue_table(const std::vector<Source>& sources, const FinderSettings& settings);

// The table as CSV: '#' lines with the title and each column's unit and description
// (unless `comments` is false: astropy's fast CSV reader, which rmtable's uses, takes
// them for rows), a header row, then one row per source; doubles with 10 significant digits.
std::string to_csv(const fits::Table& table, bool comments = true);

}  // namespace spip::catalogue
