// roce-replay --dev PORT: tcpreplay for RoCE. Puts the frames of a capture on a DPDK port (any
// PMD: a NIC, net_af_packet on an interface, net_tap, net_pcap into a file) at the capture's own
// pace times a multiplier, at a packet or bit rate, or as fast as the port takes them, as many
// loops as asked, optionally rewritten on the way (frame_rewrite.hpp). It counts what went out
// and what was left behind, and why.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "capture/link_layer.hpp"
#include "apps/replay/frame_rewrite.hpp"
#include "lib/status.hpp"

namespace roce::replay {

enum class Pace : std::uint8_t {
  Capture,   // the capture's gaps divided by `multiplier` (tcpreplay's default, --multiplier)
  Pps,       // --pps
  Mbps,      // --mbps: frame bytes on the wire, as tcpreplay counts them
  Topspeed,  // --topspeed
};

struct TransmitOptions {
  std::string input;
  std::string dev;                 // the ethdev name or port number
  std::vector<std::string> eal_args;
  Pace pace = Pace::Capture;
  double multiplier = 1.0;
  double pps = 0;
  double mbps = 0;
  std::uint64_t loops = 1;         // 0: until interrupted
  std::uint64_t limit = 0;         // stop after this many frames sent; 0: no limit
  RewriteRules rewrite;
  // --psn-base: the offset that makes the capture's first PSN (its first RoCEv2 frame but a
  // CNP) this value; resolved into rewrite.psn_offset by resolve_psn_base().
  std::optional<std::uint32_t> psn_base;
};

struct TransmitReport {
  std::string port_name, driver;
  std::uint64_t loops_done = 0;
  std::uint64_t frames_read = 0;
  std::uint64_t sent = 0, bytes = 0;
  std::uint64_t skipped_cut = 0;        // cut by the snap length: the wire frame is not in the file
  std::uint64_t skipped_link = 0;       // not Ethernet and no MACs given to make an Ethernet header
  std::uint64_t skipped_too_big = 0;    // larger than the mbufs (or the port's MTU)
  std::uint64_t retried = 0;            // bursts the port took only in part
  std::uint64_t failed = 0;             // frames the port never took
  double seconds = 0;                   // first frame sent to last
  RewriteCounts rewrite;
  capture::LinkType link = capture::LinkType::Ethernet;
  bool interrupted = false;
};

// Sets rewrite.psn_offset from psn_base; the line says what it chose.
Result<std::string> resolve_psn_base(TransmitOptions& o);

// Refuses, with what to do instead, options that cannot work together (before any DPDK set-up).
Status check_transmit_options(const TransmitOptions& o);

// Initialises the EAL (default arguments when none are given), opens the port and sends.
// `stop` ends it early (SIGINT); what was sent is still reported.
Result<TransmitReport> transmit(const TransmitOptions& o, const std::atomic<bool>& stop);

std::string format_report(const TransmitReport& r, const TransmitOptions& o);

}  // namespace roce::replay
