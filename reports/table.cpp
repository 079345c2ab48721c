#include "reports/table.hpp"

#include <algorithm>
#include <sstream>

#include "core/error.hpp"

namespace dsgd::reports {

void Table::add_row(std::vector<std::string> cells) {
  DSGD_ENFORCE_EQ(cells.size(), columns.size());
  rows.push_back(std::move(cells));
}

namespace {

std::string markdown_cell(const std::string& cell) {
  std::string out;
  for (char c : cell) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string csv_cell(const std::string& cell) {
  if (cell.find_first_of(",\"\n\r") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Display width in terminal columns: count UTF-8 lead bytes only, so "×" and "µ" count once.
std::size_t display_width(const std::string& text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace

std::string latex_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
      case '%':
      case '$':
      case '#':
      case '_':
      case '{':
      case '}':
        out += '\\';
        out += c;
        break;
      case '~':
        out += "\\textasciitilde{}";
        break;
      case '^':
        out += "\\textasciicircum{}";
        break;
      case '\\':
        out += "\\textbackslash{}";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string to_markdown(const Table& table) {
  std::ostringstream out;
  if (!table.title.empty()) out << "**" << markdown_cell(table.title) << "**\n\n";
  out << '|';
  for (const auto& column : table.columns) out << ' ' << markdown_cell(column.header) << " |";
  out << "\n|";
  for (const auto& column : table.columns) out << (column.align == Align::kRight ? " ---: |" : " --- |");
  out << '\n';
  for (const auto& row : table.rows) {
    out << '|';
    for (const auto& cell : row) out << ' ' << markdown_cell(cell) << " |";
    out << '\n';
  }
  if (!table.notes.empty()) {
    out << '\n';
    for (const auto& note : table.notes) out << "- " << note << '\n';
  }
  return out.str();
}

std::string to_csv(const Table& table) {
  std::ostringstream out;
  for (std::size_t i = 0; i < table.columns.size(); ++i) out << (i ? "," : "") << csv_cell(table.columns[i].header);
  out << "\r\n";
  for (const auto& row : table.rows) {
    for (std::size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << csv_cell(row[i]);
    out << "\r\n";
  }
  return out.str();
}

std::string to_latex(const Table& table) {
  std::ostringstream out;
  out << "\\begin{table}\n\\centering\n";
  if (!table.title.empty()) out << "\\caption{" << latex_escaped(table.title) << "}\n";
  out << "\\begin{tabular}{";
  for (const auto& column : table.columns) out << (column.align == Align::kRight ? 'r' : 'l');
  out << "}\n\\hline\n";
  for (std::size_t i = 0; i < table.columns.size(); ++i) {
    out << (i ? " & " : "") << latex_escaped(table.columns[i].header);
  }
  out << " \\\\\n\\hline\n";
  for (const auto& row : table.rows) {
    for (std::size_t i = 0; i < row.size(); ++i) out << (i ? " & " : "") << latex_escaped(row[i]);
    out << " \\\\\n";
  }
  out << "\\hline\n\\end{tabular}\n\\end{table}\n";
  return out.str();
}

std::string to_text(const Table& table) {
  std::vector<std::size_t> widths;
  for (const auto& column : table.columns) widths.push_back(display_width(column.header));
  for (const auto& row : table.rows) {
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], display_width(row[i]));
  }
  std::ostringstream out;
  auto put_row = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const std::string padding(widths[i] - display_width(cells[i]), ' ');
      if (i) out << "  ";
      if (table.columns[i].align == Align::kRight)
        out << padding << cells[i];
      else
        out << cells[i] << (i + 1 < cells.size() ? padding : "");
    }
    out << '\n';
  };
  if (!table.title.empty()) out << table.title << "\n\n";
  std::vector<std::string> headers;
  for (const auto& column : table.columns) headers.push_back(column.header);
  put_row(headers);
  std::vector<std::string> rule;
  for (const auto width : widths) rule.emplace_back(width, '-');
  put_row(rule);
  for (const auto& row : table.rows) put_row(row);
  for (const auto& note : table.notes) out << "\n" << note;
  if (!table.notes.empty()) out << '\n';
  return out.str();
}

}  // namespace dsgd::reports
