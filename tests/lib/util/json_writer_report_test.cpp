#include "lib/util/json_writer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/support/json.hpp"

namespace roce::test::json_writer_report_test {
namespace {

using roce::JsonWriter;

TEST(JsonWriter, NestedObjectsAndArraysGetTheirCommasAndColons) {
  JsonWriter w;
  w.begin_object().field("a", 1).key("b").begin_array().value(std::uint64_t{2}).value("x").begin_object().end_object().end_array();
  w.key("c").begin_object().field("d", true).key("e").null().end_object().end_object();
  EXPECT_EQ(w.str(), R"({"a":1,"b":[2,"x",{}],"c":{"d":true,"e":null}})");
  EXPECT_NO_THROW(parse_json(w.str()));
}

TEST(JsonWriter, StringsAreEscapedSoTheyReadBackUnchanged) {
  const std::string nasty = "quote\" backslash\\ newline\n tab\t bell\x07 utf8 \xc3\xa9";
  JsonWriter w;
  w.begin_object().field(nasty, nasty).end_object();
  const Json j = parse_json(w.str());
  EXPECT_EQ(j[nasty].str(), nasty);
}

TEST(JsonWriter, IntegersKeepEveryDigitAndRealsRoundTrip) {
  JsonWriter w;
  w.begin_array().value(std::numeric_limits<std::uint64_t>::max()).value(std::int64_t{-42}).value(0.1).value(1e300).end_array();
  EXPECT_EQ(w.str().substr(0, 24), "[18446744073709551615,-4");
  const Json j = parse_json(w.str());
  EXPECT_EQ(j.array()[2].num(), 0.1);
  EXPECT_EQ(j.array()[3].num(), 1e300);
}

TEST(JsonWriter, NonFiniteRealsBecomeNull) {
  JsonWriter w;
  w.begin_array().value(std::nan("")).value(std::numeric_limits<double>::infinity()).end_array();
  EXPECT_EQ(w.str(), "[null,null]");
}

}  // namespace
}  // namespace roce::test::json_writer_report_test
