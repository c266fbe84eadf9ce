// -Y: what each kind of expression matches, and the errors a mistyped filter gets.
#include "apps/inspect/display_filter.hpp"

#include <gtest/gtest.h>

#include "tests/apps/inspect/frames.hpp"

namespace roce::inspect::display_filter_test {
namespace {

using test::view_of;

bool match(const std::string& filter, const FrameView& v) {
  auto f = DisplayFilter::compile(filter);
  EXPECT_TRUE(f.ok()) << filter << ": " << (f.ok() ? "" : f.error().message);
  return f.ok() && f->matches(v, {});
}

std::string error_of(const std::string& filter) {
  auto f = DisplayFilter::compile(filter);
  return f.ok() ? "compiled" : f.error().message;
}

TEST(DisplayFilter, ComparesNumbersInDecimalOrHexAndOpcodesByName) {
  const FrameView v = view_of(test::send(100));
  EXPECT_TRUE(match("psn == 100", v));
  EXPECT_TRUE(match("psn == 0x64", v));
  EXPECT_TRUE(match("psn >= 100 and psn < 101", v));
  EXPECT_FALSE(match("psn > 100", v));
  EXPECT_TRUE(match("qpn == 0x22", v));
  EXPECT_TRUE(match("qpn eq 34", v));
  EXPECT_TRUE(match("opcode == RC_SEND_ONLY", v));
  EXPECT_TRUE(match("opcode == 4", v));
  EXPECT_TRUE(match("opcode in {0x0a 4 RC_ACKNOWLEDGE}", v));
  EXPECT_FALSE(match("opcode in {0x0a, RC_ACKNOWLEDGE}", v));
  EXPECT_TRUE(match("infiniband.bth.destqp == 0x22", v));
}

TEST(DisplayFilter, AddressesPrefixesTextAndFlags) {
  const FrameView v = view_of(test::send(1));
  EXPECT_TRUE(match("ip.src == 10.0.0.1", v));
  EXPECT_TRUE(match("ip.dst == 10.0.0.0/24", v));
  EXPECT_FALSE(match("ip.dst == 10.0.1.0/24", v));
  EXPECT_TRUE(match("ip.addr == 10.0.0.2 && ip.addr == 10.0.0.1", v));
  EXPECT_FALSE(match("ip.addr != 10.0.0.2", v));
  EXPECT_TRUE(match("icrc == ok", v));
  EXPECT_TRUE(match("icrc != \"bad\"", v));
  EXPECT_TRUE(match("ackreq", v));
  EXPECT_TRUE(match("ackreq == 1", v));
  EXPECT_FALSE(match("fecn", v));  // a yes/no field that is no
  EXPECT_FALSE(match("nak", v));
  EXPECT_TRUE(match("not nak", v));
  const FrameView n = view_of(test::ack(5, proto::Syndrome::nak(proto::NakCode::PsnSequenceError)));
  EXPECT_TRUE(match("nak && aeth.type == nak", n));
  EXPECT_TRUE(match("aeth.syndrome == 0x60", n));
  EXPECT_TRUE(match("!(nak) || psn == 5", n));
}

TEST(DisplayFilter, AbsentFieldsCompareFalseAndNotInverts) {
  const FrameView v = view_of(test::send(1));  // no RETH, no AETH
  EXPECT_FALSE(match("reth.len == 0", v));
  EXPECT_FALSE(match("reth.len != 0", v));
  EXPECT_TRUE(match("not reth.len == 0", v));
  EXPECT_FALSE(match("reth.len", v));
  EXPECT_TRUE(match("(reth.len > 5 or psn == 1) and not aeth.msn", v));
  EXPECT_TRUE(match("time >= 0", v));
}

TEST(DisplayFilter, ErrorsSayWhereAndWhat) {
  EXPECT_EQ(error_of("qpm == 1"), "column 1: unknown field 'qpm' (did you mean: m, qpn)");
  EXPECT_EQ(error_of("psn =="), "column 7: expected a value after the operator");
  EXPECT_EQ(error_of("psn == 1 and"), "column 13: expected a field name");
  EXPECT_EQ(error_of("(psn == 1"), "column 10: expected ')'");
  EXPECT_EQ(error_of("ip.src < 10.0.0.1"), "column 1: 'ip.src' is address: compare it with == or !=");
  EXPECT_EQ(error_of("psn == abc"), "column 8: 'abc' is not a number (decimal or 0x hex)");
  EXPECT_EQ(error_of("opcode == RC_NOPE"), "column 11: 'RC_NOPE' is neither a number nor an opcode name (e.g. RC_SEND_ONLY)");
  EXPECT_EQ(error_of("ip.src == 10.0.0.1/40"), "column 11: '10.0.0.1/40': the prefix length must be 0..32");
  EXPECT_EQ(error_of("psn == 1 ="), "column 10: unexpected '='");
  EXPECT_EQ(error_of("icrc == \"ok"), "column 9: unterminated \"text\"");
  EXPECT_EQ(error_of("nak == maybe"), "column 8: 'nak' is yes/no: compare it with 1/0 or true/false");
}

}  // namespace
}  // namespace roce::inspect::display_filter_test
