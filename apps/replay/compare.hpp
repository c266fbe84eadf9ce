// Holds what the engine sent against an expectation (a golden capture, or what the real
// responder sent), field by field: opcode, QPN, PSN, BTH flags, AETH syndrome and MSN, RETH,
// AtomicETH, AtomicAckETH, ImmDt, IETH, DETH, payload, ICRC status and, when asked, the time.
//
// Frames are compared per flow: the packets to one QPN of one kind (requests, responses or
// CNPs) must match in order. Order across flows is not fixed by the spec (a CNP and the ACK of
// the same packet may leave either way round), so it is not compared. Frames that are not
// RoCEv2 (ARP, TCP...) are counted and left out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/replay/frames.hpp"
#include "apps/replay/scenario.hpp"
#include "protocol/crc32.hpp"

namespace roce::replay {

struct FieldDiff {
  std::string field;
  std::string expected;
  std::string got;
};

struct FrameMismatch {
  std::string flow;           // "responses to QP 0x000012"
  std::size_t position = 0;   // 1-based within the flow
  std::string what;           // one line: which frames, or which one is missing / extra
  std::vector<FieldDiff> fields;
};

struct Comparison {
  std::size_t expected_frames = 0;  // RoCEv2 frames compared on each side
  std::size_t got_frames = 0;
  std::size_t expected_ignored = 0;  // frames that are not RoCEv2
  std::size_t got_ignored = 0;
  std::size_t acks_passed_over = 0;  // with coalesce_acks: ACKs a later response on the other side covers
  std::size_t mismatches = 0;        // all of them, also those beyond max_diffs
  std::vector<FrameMismatch> shown;  // the first max_diffs
  bool pass() const { return mismatches == 0; }
};

// The times shown as +0 in the report, one per side (the DPDK path stamps its output with the
// PMD's clock, not the capture's).
struct Origins {
  Nanos expected = 0;
  Nanos got = 0;
};

Comparison compare_frames(const std::vector<Frame>& expected, const std::vector<Frame>& got, const CompareOptions& o,
                          Origins origins, proto::CrcBackend crc = proto::CrcBackend::Isal);

// The readable report: one line per mismatch, then one line per differing field.
std::string format_comparison(const Comparison& c, const std::string& expected_name);

}  // namespace roce::replay
