// The responder's decisions on their own: each check is a pure function of (state, packet), and
// the error policy table is what makes RC, UC and UD differ.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "lib/rdma/payload.hpp"
#include "lib/rdma/responder_checks.hpp"

namespace roce::responder_checks_test {
namespace {

using namespace roce::proto;

const OpcodeInfo& op(Opcode o) { return opcode_info(raw(o)); }

TEST(ResponderChecks, RequestPsnIsExpectedDuplicateOrAheadAcrossTheWrap) {
  EXPECT_EQ(rdma::classify_request_psn(0x10, 0x10), rdma::RequestPsnClass::Expected);
  EXPECT_EQ(rdma::classify_request_psn(0x0F, 0x10), rdma::RequestPsnClass::Duplicate);
  EXPECT_EQ(rdma::classify_request_psn(0x11, 0x10), rdma::RequestPsnClass::Ahead);
  EXPECT_EQ(rdma::classify_request_psn(0xFFFFFF, 0x000001), rdma::RequestPsnClass::Duplicate);
  EXPECT_EQ(rdma::classify_request_psn(0x000001, 0xFFFFFF), rdma::RequestPsnClass::Ahead);
  // Half the PSN space behind counts as a duplicate (IBA 9.7.5.1.1).
  EXPECT_EQ(rdma::classify_request_psn((0x1000 - (1u << 22)) & 0xFFFFFF, 0x1000), rdma::RequestPsnClass::Duplicate);
}

TEST(ResponderChecks, OpcodeSequenceTakesContinuationsOnlyOfTheOpenMessage) {
  struct Case {
    rdma::OpenMessage open;
    Opcode opcode;
    rdma::RespState want;
  };
  const Case cases[] = {
      {rdma::OpenMessage::None, Opcode::RcSendFirst, rdma::RespState::CheckOpValid},
      {rdma::OpenMessage::None, Opcode::RcWriteOnly, rdma::RespState::CheckOpValid},
      {rdma::OpenMessage::None, Opcode::RcReadRequest, rdma::RespState::CheckOpValid},
      {rdma::OpenMessage::None, Opcode::RcFetchAdd, rdma::RespState::CheckOpValid},
      {rdma::OpenMessage::None, Opcode::RcSendMiddle, rdma::RespState::ErrMissingFirst},
      {rdma::OpenMessage::None, Opcode::RcWriteLast, rdma::RespState::ErrMissingFirst},
      {rdma::OpenMessage::None, Opcode::UcWriteLastImm, rdma::RespState::ErrMissingFirst},
      {rdma::OpenMessage::Send, Opcode::RcSendMiddle, rdma::RespState::CheckOpValid},
      {rdma::OpenMessage::Send, Opcode::RcSendLastInv, rdma::RespState::CheckOpValid},
      {rdma::OpenMessage::Send, Opcode::RcWriteMiddle, rdma::RespState::ErrMissingLast},
      {rdma::OpenMessage::Send, Opcode::RcSendOnly, rdma::RespState::ErrMissingLast},
      {rdma::OpenMessage::Send, Opcode::RcReadRequest, rdma::RespState::ErrMissingLast},
      {rdma::OpenMessage::Write, Opcode::RcWriteLastImm, rdma::RespState::CheckOpValid},
      {rdma::OpenMessage::Write, Opcode::RcWriteFirst, rdma::RespState::ErrMissingLast},
      {rdma::OpenMessage::Write, Opcode::RcSendLast, rdma::RespState::ErrMissingLast},
      {rdma::OpenMessage::Write, Opcode::UcWriteMiddle, rdma::RespState::CheckOpValid},
  };
  for (const Case& c : cases)
    EXPECT_EQ(rdma::check_op_seq(c.open, op(c.opcode)), c.want)
        << to_string(c.open) << " + " << op(c.opcode).name << ": " << to_string(rdma::check_op_seq(c.open, op(c.opcode)));
}

TEST(ResponderChecks, OperationNeedsTheQpsAccessFlagAndTransport) {
  const int rw = IBV_ACCESS_REMOTE_WRITE, rr = IBV_ACCESS_REMOTE_READ, ra = IBV_ACCESS_REMOTE_ATOMIC;
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_RC, 0, op(Opcode::RcSendOnly)), rdma::RespState::CheckResource);
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_RC, rw, op(Opcode::RcWriteMiddle)), rdma::RespState::CheckResource);
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_RC, rr | ra, op(Opcode::RcWriteMiddle)), rdma::RespState::ErrUnsupportedOpcode);
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_RC, rr, op(Opcode::RcReadRequest)), rdma::RespState::CheckResource);
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_RC, rw, op(Opcode::RcReadRequest)), rdma::RespState::ErrUnsupportedOpcode);
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_RC, ra, op(Opcode::RcCmpSwap)), rdma::RespState::CheckResource);
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_RC, rw | rr, op(Opcode::RcFetchAdd)), rdma::RespState::ErrUnsupportedOpcode);
  // ATOMIC_WRITE needs remote write (as rxe); FLUSH's FETH is checked against the QP's flush
  // flags by the responder (placement_test.cpp), so the opcode alone passes here.
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_RC, rw, op(Opcode::RcAtomicWrite)), rdma::RespState::CheckResource);
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_RC, rr | ra, op(Opcode::RcAtomicWrite)), rdma::RespState::ErrUnsupportedOpcode);
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_RC, 0, op(Opcode::RcFlush)), rdma::RespState::CheckResource);
  // Another transport's opcode is never valid (the engine drops it before: wrong_transport).
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_RC, rw, op(Opcode::UcWriteOnly)), rdma::RespState::ErrUnsupportedOpcode);
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_UC, rw, op(Opcode::UcWriteOnly)), rdma::RespState::CheckResource);
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_UC, 0, op(Opcode::UcWriteOnly)), rdma::RespState::ErrUnsupportedOpcode);
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_UC, 0, op(Opcode::UcSendOnlyImm)), rdma::RespState::CheckResource);
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_UD, 0, op(Opcode::UdSendOnly)), rdma::RespState::CheckResource);
  EXPECT_EQ(rdma::check_op_valid(IBV_QPT_UD, rw, op(Opcode::RcSendOnly)), rdma::RespState::ErrUnsupportedOpcode);
}

TEST(ResponderChecks, PayloadAgainstThePathMtuFollowsThePosition) {
  EXPECT_TRUE(rdma::fits_pmtu(op(Opcode::RcWriteFirst), 1024, 1024));
  EXPECT_FALSE(rdma::fits_pmtu(op(Opcode::RcWriteFirst), 100, 1024));  // a short FIRST: NAK, not a silent drop
  EXPECT_FALSE(rdma::fits_pmtu(op(Opcode::RcSendMiddle), 512, 1024));
  EXPECT_FALSE(rdma::fits_pmtu(op(Opcode::RcSendMiddle), 2048, 1024));
  EXPECT_TRUE(rdma::fits_pmtu(op(Opcode::RcSendLast), 1, 1024));
  EXPECT_FALSE(rdma::fits_pmtu(op(Opcode::RcSendLast), 0, 1024));
  EXPECT_FALSE(rdma::fits_pmtu(op(Opcode::RcSendLast), 1025, 1024));
  EXPECT_TRUE(rdma::fits_pmtu(op(Opcode::RcWriteOnly), 0, 1024));
  EXPECT_FALSE(rdma::fits_pmtu(op(Opcode::RcWriteOnly), 4096, 1024));
}

TEST(ResponderChecks, WritePacketsFitTheirRethAndTheOpenMessage) {
  EXPECT_TRUE(rdma::fits_write(op(Opcode::RcWriteOnly), 64, 64, 0));
  EXPECT_FALSE(rdma::fits_write(op(Opcode::RcWriteOnly), 64, 16, 0));
  EXPECT_FALSE(rdma::fits_write(op(Opcode::RcWriteOnly), 16, 64, 0));
  EXPECT_TRUE(rdma::fits_write(op(Opcode::RcWriteFirst), 1024, 3000, 0));
  EXPECT_FALSE(rdma::fits_write(op(Opcode::RcWriteFirst), 1024, 1000, 0));
  EXPECT_FALSE(rdma::fits_write(op(Opcode::RcWriteFirst), 1024, (1ull << 31) + 1, 0));
  EXPECT_TRUE(rdma::fits_write(op(Opcode::RcWriteMiddle), 1024, 0, 1976));
  EXPECT_FALSE(rdma::fits_write(op(Opcode::RcWriteMiddle), 1024, 0, 1000));
  EXPECT_TRUE(rdma::fits_write(op(Opcode::RcWriteLast), 952, 0, 952));
  EXPECT_FALSE(rdma::fits_write(op(Opcode::RcWriteLast), 64, 0, 952));  // LAST carries all of the rest
}

TEST(ResponderChecks, EveryStateHasItsOwnName) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < rdma::kRespStateCount; ++i) {
    const std::string n{to_string(static_cast<rdma::RespState>(i))};
    EXPECT_FALSE(n.empty() || n == "unknown") << i;
    names.insert(n);
  }
  EXPECT_EQ(names.size(), rdma::kRespStateCount);
}

TEST(ResponderChecks, UnreliableTransportsNeverAnswer) {
  for (std::size_t i = 0; i < rdma::kRespStateCount; ++i) {
    const auto s = static_cast<rdma::RespState>(i);
    if (!rdma::is_error(s)) continue;
    for (const ibv_qp_type t : {IBV_QPT_UC, IBV_QPT_UD}) {
      const rdma::ErrorAction a = rdma::error_policy(t, s).action;
      EXPECT_TRUE(a == rdma::ErrorAction::Drop || a == rdma::ErrorAction::DropMessage || a == rdma::ErrorAction::AbandonOpen ||
                  a == rdma::ErrorAction::Complete)
          << to_string(s);
    }
  }
}

TEST(ResponderChecks, ReliableConnectionErrorsFollowTheIbaClasses) {
  struct Row {
    rdma::RespState s;
    rdma::ErrorAction action;
    NakCode code;
  };
  const Row rows[] = {
      {rdma::RespState::ErrPsnOutOfSeq, rdma::ErrorAction::NakSequence, NakCode::PsnSequenceError},
      {rdma::RespState::ErrRnr, rdma::ErrorAction::NakRnr, NakCode::InvalidRequest},
      {rdma::RespState::ErrMissingFirst, rdma::ErrorAction::NakFatal, NakCode::InvalidRequest},
      {rdma::RespState::ErrMissingLast, rdma::ErrorAction::NakFatal, NakCode::InvalidRequest},
      {rdma::RespState::ErrUnsupportedOpcode, rdma::ErrorAction::NakFatal, NakCode::InvalidRequest},
      {rdma::RespState::ErrTooManyRdAtomic, rdma::ErrorAction::NakFatal, NakCode::InvalidRequest},
      {rdma::RespState::ErrLength, rdma::ErrorAction::NakFatal, NakCode::InvalidRequest},
      {rdma::RespState::ErrMisalignedAtomic, rdma::ErrorAction::NakFatal, NakCode::InvalidRequest},
      {rdma::RespState::ErrRkeyViolation, rdma::ErrorAction::NakFatal, NakCode::RemoteAccessError},
      {rdma::RespState::ErrMalformedWqe, rdma::ErrorAction::NakFatal, NakCode::RemoteOperationalError},
  };
  for (const Row& r : rows) {
    const rdma::ErrorPolicy& p = rdma::error_policy(IBV_QPT_RC, r.s);
    EXPECT_EQ(p.action, r.action) << to_string(r.s);
    if (r.action == rdma::ErrorAction::NakFatal) {
      EXPECT_EQ(p.nak, r.code) << to_string(r.s);
    }
  }
  // A corrupted packet and a full response queue are dropped on every transport.
  for (const ibv_qp_type t : {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD}) {
    EXPECT_EQ(rdma::error_policy(t, rdma::RespState::ErrCorrupted).action, rdma::ErrorAction::Drop);
    EXPECT_EQ(rdma::error_policy(t, rdma::RespState::ErrBusy).action, rdma::ErrorAction::Drop);
  }
  EXPECT_EQ(rdma::error_policy(IBV_QPT_RC, rdma::RespState::ErrBusy).counter, rdma::Counter::ResponderBusyDrops);
}

// A destination in one range, and one in a scatter list (no contiguous range).
struct Destinations {
  std::byte buf[64];
  rdma::PayloadDest contiguous, scattered;
  Destinations() { contiguous.dst = buf; }
};

TEST(ResponderChecks, OnlyMiddlePacketsOfAReliableConnectionArePlacedAheadOfTheirIcrc) {
  const Destinations d;
  const rdma::PayloadDest& contiguous = d.contiguous;
  const rdma::PayloadDest& scattered = d.scattered;
  Packet p;
  for (const Opcode o : {Opcode::RcWriteMiddle, Opcode::RcSendMiddle, Opcode::RcReadResponseMiddle}) {
    p.info = &op(o);
    EXPECT_TRUE(rdma::placement_ahead_allowed(p, true, contiguous)) << op(o).name;
    EXPECT_FALSE(rdma::placement_ahead_allowed(p, false, contiguous)) << op(o).name;
    EXPECT_FALSE(rdma::placement_ahead_allowed(p, true, scattered)) << op(o).name;
  }
  for (const Opcode o : {Opcode::RcWriteFirst, Opcode::RcWriteLast, Opcode::RcWriteOnly, Opcode::RcSendLast,
                         Opcode::RcSendOnly, Opcode::RcSendLastInv, Opcode::RcReadResponseFirst,
                         Opcode::RcReadResponseLast, Opcode::RcReadResponseOnly, Opcode::RcWriteLastImm}) {
    p.info = &op(o);
    EXPECT_FALSE(rdma::placement_ahead_allowed(p, true, contiguous)) << op(o).name;
  }
}

// A LAST is placed ahead but for its held tail, so it must be longer than that tail; FIRST,
// MIDDLE (the rule above) and ONLY never take this rule.
TEST(ResponderChecks, LastPacketsOfAReliableConnectionArePlacedAheadButForTheirTail) {
  const Destinations d;
  const rdma::PayloadDest& contiguous = d.contiguous;
  const rdma::PayloadDest& scattered = d.scattered;
  Packet p;
  p.payload_length = rdma::kHeldTailBytes + 1;
  for (const Opcode o : {Opcode::RcWriteLast, Opcode::RcWriteLastImm, Opcode::RcSendLast, Opcode::RcSendLastInv}) {
    p.info = &op(o);
    EXPECT_TRUE(rdma::last_placement_ahead_allowed(p, true, contiguous)) << op(o).name;
    EXPECT_FALSE(rdma::last_placement_ahead_allowed(p, false, contiguous)) << op(o).name;
    EXPECT_FALSE(rdma::last_placement_ahead_allowed(p, true, scattered)) << op(o).name;
    p.payload_length = rdma::kHeldTailBytes;
    EXPECT_FALSE(rdma::last_placement_ahead_allowed(p, true, contiguous)) << op(o).name;
    p.payload_length = rdma::kHeldTailBytes + 1;
  }
  for (const Opcode o : {Opcode::RcWriteFirst, Opcode::RcWriteMiddle, Opcode::RcWriteOnly, Opcode::RcSendOnly,
                         Opcode::RcSendMiddle, Opcode::RcWriteOnlyImm}) {
    p.info = &op(o);
    EXPECT_FALSE(rdma::last_placement_ahead_allowed(p, true, contiguous)) << op(o).name;
  }
}

}  // namespace
}  // namespace roce::responder_checks_test
