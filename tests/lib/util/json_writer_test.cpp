#include "lib/util/json_writer.hpp"

#include <gtest/gtest.h>

#include "tests/support/json.hpp"

namespace roce::json_writer_test {
namespace {

TEST(JsonWriter, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_quote("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(json_quote("line\nnext\ttab\r"), R"("line\nnext\ttab\r")");
  EXPECT_EQ(json_quote(std::string("\x01\x1f", 2)), R"("\u0001\u001f")");
  EXPECT_EQ(json_quote(std::string("nul\0x", 5)), R"("nul\u0000x")");
  EXPECT_EQ(json_quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 passes through
}

TEST(JsonWriter, EveryAsciiStringSurvivesAParseRoundTrip) {
  std::string all;
  for (int c = 0; c < 0x80; ++c) all += static_cast<char>(c);
  JsonWriter w;
  w.begin_object().field("s", all).end_object();
  EXPECT_EQ(test::parse_json(w.str())["s"].str(), all);
}

TEST(JsonWriter, PlacesCommasAndColonsInNestedObjectsAndArrays) {
  JsonWriter w;
  w.begin_object();
  w.field("n", std::uint64_t{18446744073709551615u});
  w.field("neg", -5);
  w.field("t", true);
  w.key("nothing").null();
  w.key("list").begin_array();
  w.value(1).begin_object().field("k", "v").end_object().begin_array().end_array();
  w.end_array();
  w.key("empty").begin_object().end_object();
  w.end_object();
  EXPECT_EQ(w.str(),
            R"({"n":18446744073709551615,"neg":-5,"t":true,"nothing":null,"list":[1,{"k":"v"},[]],"empty":{}})");
  const auto j = test::parse_json(w.str());
  EXPECT_EQ(j["list"].array().size(), 3u);
  EXPECT_EQ(j["list"].array()[1]["k"].str(), "v");
}

}  // namespace
}  // namespace roce::json_writer_test
