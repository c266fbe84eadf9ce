#include "lib/util/json_fields.hpp"

#include <gtest/gtest.h>

#include <array>

namespace roce::json_fields_test {
namespace {

constexpr std::array kConnect{
    JsonField{"qpn", JsonType::Uint, true, 0, 0xFFFFFF, "24 bits"},
    JsonField{"remote_ip", JsonType::String, true},
    JsonField{"keep", JsonType::Bool, false},
};

Status check(const std::string& text) {
  auto v = parse_json(text);
  if (!v) return v.error();
  return check_fields(*v, "connect_qp", kConnect, "cmd");
}

std::string message(const std::string& text) {
  const Status s = check(text);
  return s ? "" : s.error().message;
}

TEST(JsonFields, AWellFormedCommandPasses) {
  EXPECT_TRUE(check(R"({"cmd":"connect_qp","qpn":17,"remote_ip":"10.0.0.1"})").ok());
  EXPECT_TRUE(check(R"({"cmd":"connect_qp","qpn":16777215,"remote_ip":"x","keep":false})").ok());
}

TEST(JsonFields, AnUnknownFieldIsNamedWithTheFieldsThatExist) {
  EXPECT_EQ(message(R"({"cmd":"connect_qp","qpn":1,"remote_ip":"x","remote_qpm":3})"),
            "connect_qp: unknown field \"remote_qpm\" (connect_qp takes qpn, remote_ip, keep)");
}

TEST(JsonFields, AWrongTypeSaysWhatCameAndWhatWasWanted) {
  EXPECT_EQ(message(R"({"qpn":"17","remote_ip":"x"})"), "connect_qp: \"qpn\" must be a whole number 0 .. 16777215, not a string");
  EXPECT_EQ(message(R"({"qpn":1.5,"remote_ip":"x"})"), "connect_qp: \"qpn\" must be a whole number 0 .. 16777215, not 1.500000");
  EXPECT_EQ(message(R"({"qpn":-1,"remote_ip":"x"})"), "connect_qp: \"qpn\" must be a whole number 0 .. 16777215, not -1");
  EXPECT_EQ(message(R"({"qpn":1,"remote_ip":7})"), "connect_qp: \"remote_ip\" must be a string, not a number");
  EXPECT_EQ(message(R"({"qpn":1,"remote_ip":"x","keep":1})"), "connect_qp: \"keep\" must be true or false, not a number");
  EXPECT_EQ(message(R"({"qpn":null,"remote_ip":"x"})"), "connect_qp: \"qpn\" must be a whole number 0 .. 16777215, not null");
  EXPECT_EQ(message(R"({"qpn":[1],"remote_ip":"x"})"), "connect_qp: \"qpn\" must be a whole number 0 .. 16777215, not an array");
}

TEST(JsonFields, AValueOutsideItsRangeIsRefusedNotTruncated) {
  // 2^40 would be 0 in 24 bits; 2^24 would be 0 too.
  EXPECT_EQ(message(R"({"qpn":1099511627776,"remote_ip":"x"})"),
            "connect_qp: \"qpn\" 1099511627776 is outside 0 .. 16777215 (24 bits)");
  EXPECT_EQ(check(R"({"qpn":16777216,"remote_ip":"x"})").error().code, ERANGE);
  EXPECT_NE(message(R"({"qpn":1e300,"remote_ip":"x"})").find("not "), std::string::npos);
}

TEST(JsonFields, AMissingRequiredFieldIsNamed) {
  EXPECT_EQ(message(R"({"cmd":"connect_qp","qpn":1})"),
            "connect_qp: \"remote_ip\" is missing (connect_qp takes qpn, remote_ip, keep)");
  EXPECT_EQ(message("[1]"), "connect_qp: a command is a JSON object");
}

}  // namespace
}  // namespace roce::json_fields_test
