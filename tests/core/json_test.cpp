#include "core/json.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

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

TEST(CoreJson, CommentsAreSkippedWithTheQuotesAndBracketsInThem) {
  // A comment's "a" and braces are not the document's: no duplicate key, no depth.
  const Json json = parse_json("// a \"a\": 1, {\n{\"a\": 1, /* \"a\": { */ \"b\": 2}\n", "c.json");
  EXPECT_EQ(json.at("a"), 1);
  EXPECT_EQ(json.at("b"), 2);
  EXPECT_THROW(parse_json("{\"a\": 1, // x\n \"a\": 2}", "c.json"), InputError) << "a key twice is still found";
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

// Hostile input (issue 26): each of these crashed dsgd or gave an internal error before.
TEST(CoreJson, DeepNestingIsRefusedWithItsPosition) {
  const std::string deep = "{\"schema\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const std::string message = message_of([&] { parse_json(deep, "d.json"); });
  EXPECT_EQ(message, "d.json:1:" + std::to_string(11 + kMaxJsonDepth) + ": JSON nested deeper than " +
                         std::to_string(kMaxJsonDepth) + " levels");
  // At the limit it parses, and a type error describes the container without rendering it.
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  const Json json = parse_json(ok, "ok.json");
  EXPECT_EQ(message_of([&] { JsonView(json, "ok.json").string(); }),
            "ok.json: /: expected a string, got an array of 1 elements");
}

TEST(CoreJson, NumberOverflowIsAnInputErrorWithItsPosition) {
  EXPECT_EQ(message_of([] { parse_json("{\n  \"latency_s\": 1e400\n}", "n.json"); }),
            "n.json:2:16: JSON number out of range: 1e400 (beyond a 64-bit integer or double)");
  const Json big = parse_json(R"({"n": 18446744073709551615})", "u.json");
  EXPECT_EQ(message_of([&] { JsonView(big, "u.json").at("n").integer(); }),
            "u.json: /n: expected an integer below 2^63, got number 18446744073709551615");
}

TEST(CoreJson, DuplicateKeysAreRefused) {
  EXPECT_EQ(message_of([] { parse_json(R"({"a": {"b": 1, "c": [{"b": 2}], "b": 3}})", "k.json"); }),
            "k.json:1:33: JSON object names 'b' twice (the first value would be ignored)");
  // The same key in sibling objects, and a key spelled inside a string value, are fine.
  EXPECT_NO_THROW(parse_json(R"({"x": {"b": 1}, "y": {"b": 2}, "z": "\"x\": 1"})", "s.json"));
}

TEST(CoreJson, AFolderIsNotAJsonFile) {
  const auto folder = std::filesystem::temp_directory_path();
  EXPECT_EQ(message_of([&] { read_json_file(folder); }), folder.string() + ": is a folder, not a file");
}

TEST(CoreJson, PointerTokensAreEscaped) {
  const Json json = parse_json(R"({"a/b": {"c~d": "x"}})", "e.json");
  const JsonView view = JsonView(json, "e.json").at("a/b").at("c~d");
  EXPECT_EQ(view.path(), "/a~1b/c~0d");
}

TEST(CoreJson, UnknownNameErrorListsValidNames) {
  const UnknownNameError error("model", "resnet5", {"resnet50", "resnet101"});
  EXPECT_STREQ(error.what(), "unknown model 'resnet5'; did you mean 'resnet50'? valid values are: resnet50, resnet101");
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
