// Copyright Weft authors. `nvidia-smi topo -m` parsing and topology groups.
#include "nm/devices/gpu_topology.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace weft::nm {
namespace {

// `line` without terminal escape sequences (ESC '[' ... letter): nvidia-smi underlines its
// header row when it writes to a terminal, and some drivers do so into a pipe too.
std::string WithoutEscapes(absl::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !absl::ascii_isalpha(static_cast<unsigned char>(line[i]))) ++i;
      continue;
    }
    out.push_back(line[i]);
  }
  return out;
}

// "GPU<k>" -> k; -1 otherwise.
int GpuNumber(absl::string_view cell) {
  int k = -1;
  if (!absl::ConsumePrefix(&cell, "GPU") || !absl::SimpleAtoi(cell, &k) || k < 0) return -1;
  return k;
}

bool KnownLink(absl::string_view link) {
  if (link == "X" || link == "PIX" || link == "PXB" || link == "PHB" || link == "NODE" ||
      link == "SYS") {
    return true;
  }
  int n = 0;
  return absl::ConsumePrefix(&link, "NV") && absl::SimpleAtoi(link, &n) && n > 0;
}

bool CloseLink(absl::string_view link) {
  return absl::StartsWith(link, "NV") || link == "PIX" || link == "PXB";
}

std::vector<std::string> Cells(absl::string_view line) {
  std::vector<std::string> cells;
  for (absl::string_view cell : absl::StrSplit(line, '\t')) {
    cells.emplace_back(absl::StripAsciiWhitespace(cell));
  }
  return cells;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<std::string>>> ParseNvidiaSmiTopo(absl::string_view text) {
  std::vector<std::string> header;
  std::vector<int> gpu_columns;  // column of GPU k in the header, by k
  std::vector<std::vector<std::string>> links;
  int line_number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_number;
    const std::string line = WithoutEscapes(raw);
    std::vector<std::string> cells = Cells(line);
    if (gpu_columns.empty()) {
      // The header: an empty first cell, then GPU0, GPU1, ... (NICs and affinities after).
      for (size_t c = 0; c < cells.size(); ++c) {
        if (GpuNumber(cells[c]) == static_cast<int>(gpu_columns.size())) {
          gpu_columns.push_back(static_cast<int>(c));
        }
      }
      if (!gpu_columns.empty()) header = cells;
      continue;
    }
    if (cells.empty() || cells[0].empty()) {
      if (!links.empty()) break;  // the blank line before the legend ends the matrix
      continue;
    }
    const int row = GpuNumber(cells[0]);
    if (row < 0) {
      if (absl::StartsWith(cells[0], "NIC")) continue;  // NIC rows
      break;                                          // "Legend:" and beyond
    }
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("nvidia-smi topo -m line ", line_number, " ('", absl::StripAsciiWhitespace(line),
                       "'): ", why));
    };
    if (row != static_cast<int>(links.size())) {
      return bad(absl::StrCat("expected the row of GPU", links.size()));
    }
    if (row >= static_cast<int>(gpu_columns.size())) return bad("a GPU the header does not name");
    // A row's cells line up with the header's, whose first cell is the (empty) corner.
    std::vector<std::string> out;
    for (int k = 0; k < static_cast<int>(gpu_columns.size()); ++k) {
      const size_t c = static_cast<size_t>(gpu_columns[k]);
      if (c >= cells.size()) return bad(absl::StrCat("no cell for GPU", k));
      if (!KnownLink(cells[c])) return bad(absl::StrCat("'", cells[c], "' is not a known link"));
      if ((k == row) != (cells[c] == "X")) {
        return bad(absl::StrCat("GPU", row, " to GPU", k, " is '", cells[c], "'"));
      }
      out.push_back(cells[c]);
    }
    links.push_back(std::move(out));
  }
  if (gpu_columns.empty()) {
    return absl::InvalidArgumentError("nvidia-smi topo -m output has no header naming GPU0");
  }
  if (links.size() != gpu_columns.size()) {
    return absl::InvalidArgumentError(absl::StrCat("nvidia-smi topo -m names ", gpu_columns.size(),
                                                   " GPU(s) but has ", links.size(), " row(s)"));
  }
  return links;
}

std::vector<std::string> TopologyGroups(const std::vector<std::vector<std::string>>& links,
                                        const std::vector<int32_t>& names) {
  const size_t n = links.size();
  std::vector<size_t> root(n);
  std::iota(root.begin(), root.end(), size_t{0});
  auto find = [&root](size_t i) {
    while (root[i] != i) i = root[i] = root[root[i]];
    return i;
  };
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n && j < links[i].size(); ++j) {
      if (!CloseLink(links[i][j])) continue;
      size_t a = find(i), b = find(j);
      if (a != b) root[std::max(a, b)] = std::min(a, b);
    }
  }
  std::map<size_t, int32_t> lowest;  // group root -> lowest name in it
  for (size_t i = 0; i < n; ++i) {
    const int32_t name = i < names.size() ? names[i] : static_cast<int32_t>(i);
    auto [it, inserted] = lowest.try_emplace(find(i), name);
    if (!inserted) it->second = std::min(it->second, name);
  }
  std::vector<std::string> groups(n);
  for (size_t i = 0; i < n; ++i) groups[i] = absl::StrCat("g", lowest[find(i)]);
  return groups;
}

}  // namespace weft::nm
