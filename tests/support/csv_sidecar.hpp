// The CSV sidecars the cross-check generators write next to their pcaps: '#' comment lines, a
// header row, then one row per frame with plain (unquoted) values, numbers in C syntax (0x..).
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace roce::test {

class CsvRow {
 public:
  explicit CsvRow(std::map<std::string, std::string> cells) : cells_(std::move(cells)) {}
  // The value of a numeric column, or nullopt when the column is empty (field not present).
  std::optional<std::uint64_t> number(const std::string& column) const {
    const std::string& s = text(column);
    if (s.empty()) return std::nullopt;
    return std::stoull(s, nullptr, 0);
  }
  const std::string& text(const std::string& column) const {
    static const std::string kEmpty;
    const auto it = cells_.find(column);
    return it == cells_.end() ? kEmpty : it->second;
  }

 private:
  std::map<std::string, std::string> cells_;
};

inline std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

inline std::vector<CsvRow> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<CsvRow> rows;
  std::vector<std::string> header;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto cells = split_csv_line(line);
    if (header.empty()) {
      header = std::move(cells);
      continue;
    }
    std::map<std::string, std::string> m;
    for (std::size_t i = 0; i < header.size(); ++i) m[header[i]] = i < cells.size() ? cells[i] : "";
    rows.emplace_back(std::move(m));
  }
  return rows;
}

}  // namespace roce::test
