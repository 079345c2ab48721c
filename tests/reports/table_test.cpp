#include "reports/table.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace dsgd::reports {
namespace {

Table sample() {
  Table table;
  table.title = "T";
  table.columns = {{"name", Align::kLeft}, {"value", Align::kRight}};
  table.add_row({"a|b", "1"});
  table.add_row({"with, comma \"q\"", "22"});
  table.notes = {"source: seed 000 Table 3"};
  return table;
}

TEST(ReportsTable, MarkdownEscapesPipesAndAlignsNumbersRight) {
  const std::string md = to_markdown(sample());
  EXPECT_NE(md.find("| name | value |\n| --- | ---: |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| a\\|b | 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("- source: seed 000 Table 3"), std::string::npos) << md;
}

TEST(ReportsTable, CsvQuotesPerRfc4180) {
  EXPECT_EQ(to_csv(sample()), "name,value\r\na|b,1\r\n\"with, comma \"\"q\"\"\",22\r\n");
}

TEST(ReportsTable, LatexEscapesSpecialCharacters) {
  Table table;
  table.columns = {{"a_b", Align::kLeft}};
  table.add_row({"50% & $x$"});
  const std::string tex = to_latex(table);
  EXPECT_NE(tex.find("a\\_b"), std::string::npos) << tex;
  EXPECT_NE(tex.find("50\\% \\& \\$x\\$"), std::string::npos) << tex;
}

TEST(ReportsTable, TextPadsByDisplayWidth) {
  Table table;
  table.columns = {{"shape", Align::kLeft}, {"n", Align::kRight}};
  table.add_row({"1×28×28", "5"});
  table.add_row({"x", "500"});
  // "1×28×28" is 7 columns wide although 9 bytes long.
  EXPECT_EQ(to_text(table), "shape      n\n-------  ---\n1×28×28    5\nx        500\n");
}

TEST(ReportsTable, RowOfWrongWidthIsAnInternalError) {
  Table table;
  table.columns = {{"a", Align::kLeft}};
  EXPECT_THROW(table.add_row({"1", "2"}), InternalError);
}

}  // namespace
}  // namespace dsgd::reports
