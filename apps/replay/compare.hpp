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
#include <cstddef>
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
  std::string explained_by;   // set by explain_by_gaps(): the frames the capture lacks
};

// Where a mismatch sits, kept for every one of them (also those not shown).
struct MismatchPlace {
  std::uint32_t qpn = 0;      // the flow's destination QP
  bool responses = false;
  std::uint32_t psn = 0;      // of the expected frame, else of the output's
  bool extra_ack = false;     // a plain ACK of ours the expectation lacks
  std::size_t shown = SIZE_MAX;  // index into Comparison::shown
};

// PSNs of a request flow that the capture lacks and the real responder did not ask for again
// (no sequence NAK for them): packets the sniffer dropped, not the network. `acked_past` when
// the real responder's answers acknowledge beyond them (then it certainly received them);
// otherwise none of its answers after the gap made it into the capture either.
struct CaptureGap {
  std::uint32_t qpn = 0;         // the QP the requests go to
  std::uint32_t answers_to = 0;  // the QP its responses go to
  std::uint32_t first = 0, last = 0;
  std::uint64_t after_frame = 0;  // the capture's last request frame before the gap
  bool acked_past = false;
};

struct Comparison {
  std::size_t expected_frames = 0;  // RoCEv2 frames compared on each side
  std::size_t got_frames = 0;
  std::size_t expected_ignored = 0;  // frames that are not RoCEv2
  std::size_t got_ignored = 0;
  std::size_t acks_passed_over = 0;  // with coalesce_acks: ACKs a later response on the other side covers
  std::size_t mismatches = 0;        // all of them, also those beyond max_diffs
  std::vector<FrameMismatch> shown;  // the first max_diffs
  std::vector<MismatchPlace> places;  // one per mismatch
  std::size_t explained = 0;          // mismatches frames missing from the capture explain
  std::vector<std::string> gap_notes; // one line per gap that explains something
  bool pass() const { return mismatches == 0; }
  // Every difference is one the capture's missing frames explain.
  bool pass_but_for_gaps() const { return mismatches > 0 && explained == mismatches; }
};

// The times shown as +0 in the report, one per side (the DPDK path stamps its output with the
// PMD's clock, not the capture's).
struct Origins {
  Nanos expected = 0;
  Nanos got = 0;
};

Comparison compare_frames(const std::vector<Frame>& expected, const std::vector<Frame>& got, const CompareOptions& o,
                          Origins origins, proto::CrcBackend crc = proto::CrcBackend::Isal);

// Mismatches in responses to a gap's QP from its first missing PSN on are explained by it, and
// so is an ACK of ours for the PSN just before it: the real responder's ACK that covers the same
// PSNs lies past the gap.
void explain_by_gaps(Comparison& c, const std::vector<CaptureGap>& gaps);

// The readable report: one line per mismatch, then one line per differing field.
std::string format_comparison(const Comparison& c, const std::string& expected_name);

}  // namespace roce::replay
