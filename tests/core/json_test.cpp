#include "core/json.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace dsgd {
namespace {

std::string message_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CoreJson, SyntaxErrorNamesSourceLineAndColumn) {
  const std::string text = "{\n  \"a\": 1,\n  \"b\": }\n";
  const std::string message = message_of([&] { parse_json(text, "f.json"); });
  EXPECT_EQ(message.rfind("f.json:3:8: JSON syntax error: ", 0), 0U) << message;
}

TEST(CoreJson, TruncatedTextIsASyntaxErrorAtTheEnd) {
  const std::string message = message_of([] { parse_json("{\"a\": [1, 2", "t.json"); });
  EXPECT_EQ(message.rfind("t.json:1:", 0), 0U) << message;
}

TEST(CoreJson, ViewErrorsNameTheJsonPath) {
  const Json json = parse_json(R"({"net": {"links": [{"bandwidth_Bps": -5, "name": "x"}], "kind": "ring"}})", "p.json");
  const JsonView root(json, "p.json");
  const JsonView link = root.at("net").at("links").at(std::size_t{0});
  EXPECT_EQ(message_of([&] { link.at("bandwidth_Bps").positive(); }),
            "p.json: /net/links/0/bandwidth_Bps: expected a positive number, got number -5");
  EXPECT_EQ(message_of([&] { link.at("latency_s"); }), "p.json: /net/links/0: missing required field 'latency_s'");
  EXPECT_EQ(message_of([&] {
              root.at("net").at("kind").one_of({"star", "torus"});
            }),
            "p.json: /net/kind: unknown value 'ring'; valid values are: star, torus");
  EXPECT_EQ(message_of([&] { link.allow_only({"bandwidth_Bps"}); }),
            "p.json: /net/links/0: unknown field 'name'; valid fields are: bandwidth_Bps");
  EXPECT_EQ(message_of([&] { link.at("name").number(); }),
            "p.json: /net/links/0/name: expected a number, got string \"x\"");
  EXPECT_EQ(message_of([&] { root.at("net").at("links").integer(); }).find("p.json: /net/links: expected an integer"),
            0U);
}

TEST(CoreJson, PointerTokensAreEscaped) {
  const Json json = parse_json(R"({"a/b": {"c~d": "x"}})", "e.json");
  const JsonView view = JsonView(json, "e.json").at("a/b").at("c~d");
  EXPECT_EQ(view.path(), "/a~1b/c~0d");
}

TEST(CoreJson, UnknownNameErrorListsValidNames) {
  const UnknownNameError error("model", "resnet5", {"resnet50", "resnet101"});
  EXPECT_STREQ(error.what(), "unknown model 'resnet5'; valid values are: resnet50, resnet101");
}

TEST(CoreJson, EnforceReportsBothValuesAndLocation) {
  try {
    DSGD_ENFORCE_EQ(2 + 2, 5);
    FAIL();
  } catch (const InternalError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("json_test.cpp:"), std::string::npos) << message;
    EXPECT_NE(message.find("2 + 2 == 5 does not hold: 4 vs 5"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace dsgd
