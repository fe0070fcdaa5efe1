#pragma once
// The polarised-source catalogue as a FITS binary table and as CSV, with one set of
// column names, units and descriptions for both (docs/products.md lists them).
#include <string>
#include <vector>

#include "spip/catalogue/source_finder.hpp"
#include "spip/fits/fits_table.hpp"

namespace spip::catalogue {

fits::Table catalogue_table(const std::vector<Source>& sources, const FinderSettings& settings);

// The table as CSV: a header row, then one row per source; doubles with 10 significant
// digits. Nothing else: astropy's CSV reader (Table.read's choice for .csv, and rmtable's),
// TOPCAT's and pandas' default take '#' lines for rows. Units, descriptions and the
// finder's settings are in the FITS table.
std::string to_csv(const fits::Table& table);

}  // namespace spip::catalogue
