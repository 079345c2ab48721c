#pragma once
// A table of already-formatted cells, written as Markdown (for report/index.md), CSV (for spreadsheets and
// plotting) or LaTeX (for papers).

#include <string>
#include <vector>

namespace dsgd::reports {

enum class Align { kLeft, kRight };

struct Column {
  std::string header;
  Align align = Align::kLeft;
};

struct Table {
  std::string title;
  std::vector<Column> columns;
  std::vector<std::vector<std::string>> rows;  // each row has columns.size() cells
  std::vector<std::string> notes;              // printed under the table (sources, fitted knobs, caveats)

  // Appends a row; throws InternalError if its width differs from the columns'.
  void add_row(std::vector<std::string> cells);
};

std::string to_markdown(const Table& table);
std::string to_csv(const Table& table);    // RFC 4180 quoting; header row first; notes left out
std::string to_latex(const Table& table);  // a tabular inside a table environment, with escaped cells
// Text set by LaTeX as written: its special characters (& % $ # _ { } ~ ^ \\) escaped.
std::string latex_escaped(const std::string& text);
// Fixed-width text for a terminal (what `dsgd models` prints).
std::string to_text(const Table& table);

}  // namespace dsgd::reports
