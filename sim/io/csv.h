#pragma once
// Plain CSV cells, for the readers of tools' CSV output (job traces, loss-rate tables): no
// quoting, cells trimmed.

#include <string>
#include <vector>

namespace adaptsim::io {

// The cells of one line split at every ',', each trimmed; a trailing ',' gives an empty last cell.
std::vector<std::string> split_csv_row(const std::string& line);

// `s` as a whole finite double (std::from_chars: no leading '+', no spaces, no trailing text).
bool parse_number(const std::string& s, double& out);

}  // namespace adaptsim::io
