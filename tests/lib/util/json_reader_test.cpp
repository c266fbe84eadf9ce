#include "lib/util/json_reader.hpp"

#include <gtest/gtest.h>

#include "lib/util/json_writer.hpp"

namespace roce::json_reader_test {
namespace {

TEST(JsonReader, ParsesCommandsWithNestedValues) {
  auto v = parse_json(R"( {"cmd":"create_mr","size":4096,"access":["remote_write","remote_read"],"ok":true,"x":null} )");
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->get_string("cmd"), "create_mr");
  EXPECT_EQ(v->get_uint("size"), 4096u);
  ASSERT_NE(v->get("access"), nullptr);
  ASSERT_EQ(v->get("access")->array()->size(), 2u);
  EXPECT_EQ(*(*v->get("access")->array())[1].string(), "remote_read");
  EXPECT_EQ(v->get("ok")->boolean(), true);
  EXPECT_TRUE(v->get("x")->is_null());
  EXPECT_FALSE(v->get_uint("cmd"));
}

TEST(JsonReader, ReadsBackWhatTheWriterWrote) {
  JsonWriter w;
  w.begin_object().field("s", "a\"b\\c\n\x01").field("n", std::uint64_t{123456789}).field("d", 2.5).end_object();
  auto v = parse_json(w.str());
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->get_string("s"), "a\"b\\c\n\x01");
  EXPECT_EQ(v->get_uint("n"), 123456789u);
  EXPECT_EQ(v->get("d")->number(), 2.5);
}

TEST(JsonReader, HostileTextIsAnErrorWithAnOffset) {
  for (const char* bad : {"", "{", "{\"a\"}", "[1,]", "\"unterminated", "{\"a\":1}x", "nul", "1e999", "[\"\\q\"]"}) {
    auto v = parse_json(bad);
    EXPECT_FALSE(v.ok()) << bad;
  }
  std::string deep(100, '[');
  auto v = parse_json(deep);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("deeply"), std::string::npos);
  EXPECT_FALSE(parse_json(std::string(2 << 20, ' ')).ok());
}

// Which of two equal keys wins differs between parsers (and the last one winning let
// {"cmd":"counters","cmd":"stop"} stop the appliance): a repeated key is an error, at any depth.
TEST(JsonReader, ARepeatedKeyIsAnErrorNamingIt) {
  for (const char* bad : {R"({"cmd":"counters","cmd":"stop"})", R"({"a":1,"b":2,"a":1})", R"({"x":{"k":1,"k":2}})",
                          R"([{"cmd":"a"},{"cmd":"b","cmd":"b"}])", R"({"c\u006dd":"x","cmd":"y"})"}) {
    auto v = parse_json(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_NE(v.error().message.find("duplicate key"), std::string::npos) << bad << ": " << v.error().message;
  }
  auto v = parse_json(R"({"cmd":"counters","cmd":"stop"})");
  EXPECT_NE(v.error().message.find("\"cmd\""), std::string::npos) << v.error().message;
  // The same key in sibling objects is fine.
  EXPECT_TRUE(parse_json(R"([{"cmd":"a"},{"cmd":"b"}])").ok());
}

}  // namespace
}  // namespace roce::json_reader_test
