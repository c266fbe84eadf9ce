// What a perftest-shaped test does: which verb, bandwidth or latency, message size, how many
// iterations or for how long, and how deep the send queue runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lib/time.hpp"

namespace roce::client {

// AtomicWrite and Flush are IBTA 1.5's (annex A19, Linux 6.2+ rxe): no perftest test has them;
// roce-gen runs them as perftest runs READ (the same exchange, the server only exposes memory).
enum class Verb : std::uint8_t { Write, Read, Send, Atomic, AtomicWrite, Flush };
enum class Measure : std::uint8_t { Bandwidth, Latency };
// perftest's -A: the atomic an atomic test runs (CMP_AND_SWAP compares with 0 and swaps in 0,
// FETCH_AND_ADD adds 1, as perftest's work requests do).
enum class AtomicOp : std::uint8_t { FetchAndAdd, CmpAndSwap };

struct TrafficSpec {
  Verb verb = Verb::Write;
  Measure measure = Measure::Bandwidth;
  AtomicOp atomic = AtomicOp::FetchAndAdd;
  std::uint32_t size = 65536;
  std::uint64_t iters = 5000;
  Nanos duration = 0;            // > 0: run for this long instead of `iters`
  std::uint32_t tx_depth = 128;  // outstanding work requests per QP (bandwidth tests)
  double rate_limit_gbps = 0;    // 0 = as fast as possible
  bool verify = false;           // fill the source with a pattern and check the far side after
  // perftest's -Q, -l, -I: a completion every cq_mod send WRs (and on the last), post_list WRs
  // per post, payloads up to inline_size bytes copied at post time.
  std::uint32_t cq_mod = 1;
  std::uint32_t post_list = 1;
  std::uint32_t inline_size = 0;
  Nanos margin = 0;              // -D: left out of the figures at both ends of the run
  bool record_peak = true;       // keep per-operation times for the peak (perftest's noPeak: false)
};

std::string to_string(Verb v);
std::optional<Verb> verb_from_string(std::string_view s);
std::string to_string(Measure m);
std::string to_string(AtomicOp a);  // perftest's spelling: "FETCH_AND_ADD", "CMP_AND_SWAP"
std::optional<AtomicOp> atomic_op_from_string(std::string_view s);

// Bytes one operation moves: atomics and ATOMIC_WRITE are 8 bytes whatever -s says (a FLUSH moves
// none; its figure is the range it makes durable, -s).
constexpr bool eight_byte_verb(Verb v) { return v == Verb::Atomic || v == Verb::AtomicWrite; }
constexpr std::uint32_t op_bytes(const TrafficSpec& s) { return eight_byte_verb(s.verb) ? 8 : s.size; }
// The verbs that finish on a response and take a responder resource on the peer (perftest's
// "reads": -o, the QP's max_rd_atomic, no inline data).
constexpr bool takes_responder_resource(Verb v) { return v == Verb::Read || v == Verb::Atomic || v == Verb::AtomicWrite || v == Verb::Flush; }

}  // namespace roce::client
