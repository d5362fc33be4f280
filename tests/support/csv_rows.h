#pragma once
// A CSV file as rows of cells split at commas (the tools' CSVs quote nothing the tests read),
// every line including the header; no rows when the file cannot be read.

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace adaptsim::testing {

inline std::vector<std::vector<std::string>> csv_rows(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ','))
      cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace adaptsim::testing
