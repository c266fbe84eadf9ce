// perftest's Ethernet-mode exchange (ib_*_bw / ib_*_lat, perftest 4.5, ../shared/interop/OOB.md):
// fixed-size records with no framing, where in every step the client writes then reads and
// the server reads then writes. The test programs sequence the steps.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <string>

#include "client/oob/records.hpp"
#include "client/tcp.hpp"
#include "lib/cm/ece.hpp"

namespace roce::client {

enum class OobRole : std::uint8_t { Client, Server };

struct PerftestResults {
  std::uint64_t size = 0;
  std::uint64_t iters = 0;
  double bw_peak = 0;  // as perftest reports them (MB/s or Gb/s)
  double bw_avg = 0;
  double msg_rate = 0;  // Mpps
};

// perftest version strings compare as major.minor numbers ("5.32" < "6.06").
int compare_versions(const std::string& a, const std::string& b);

// The oldest peer perftest 4.5 talks to. Newer ones (6.28 and up negotiate their parameters) keep
// the old exchange when the peer says 6.06.
inline constexpr const char* kOldestPeerVersion = "5.70";
// A clear error for a version string perftest 4.5 would refuse.
Status check_remote_version(const std::string& version);

// The 16-byte version record. perftest reads it only as a C string (atof), so the bytes after
// the version's NUL are never looked at, and perftest sends zeros there. rocev2-dp puts an ECE
// there (lib/cm/ece.hpp: a 24-bit vendor ID then a 32-bit options word, big-endian), the same
// one its CM REQ/REP carry: that is how roce-gen and roce-appliance agree on selective repeat
// over the TCP exchange (docs/loss.md). A zero ECE leaves the record as perftest's.
inline constexpr std::size_t kPerftestVersionBytes = 16;
std::array<char, kPerftestVersionBytes> perftest_version_record(const std::string& version, const cm::Ece& ece = {});
// The ECE a version record carries after its text; zero for perftest's own records.
cm::Ece perftest_version_ece(const std::array<char, kPerftestVersionBytes>& record);

class PerftestSession {
 public:
  static constexpr const char* kVersion = "6.06";  // what perftest 4.5 (Debian 12) sends

  PerftestSession(OobChannel& tcp, OobRole role, int timeout_ms = 30'000) : tcp_(tcp), role_(role), timeout_(timeout_ms) {}

  // The version, with `ece` after it (perftest_version_record); remote_ece() is the peer's.
  // As a client, `ece` is our offer; a server that read the client's first answers it.
  Status exchange_versions(const cm::Ece& ece = {});
  // Cycle-buffer (page) size and cache line: each side keeps the larger. Skipped for peers
  // older than 5.32, as perftest does.
  // A peer's cycle buffer beyond kMaxCycleBuffer is refused (it sizes the memory we expose).
  static constexpr std::uint32_t kMaxCycleBuffer = 1u << 20;
  Status exchange_sizes(std::uint32_t cycle_buffer = 4096, std::uint32_t cache_line = 64);
  // The larger of both sides' cycle buffers once exchanged: a peer walks its WRITEs, READs and
  // atomics of messages up to half of it through that many bytes from the address we gave it.
  std::uint32_t cycle_buffer() const { return cycle_buffer_; }
  // Both sides use the smaller MTU.
  Result<ibv_mtu> exchange_mtu(ibv_mtu mine);
  Result<PerftestDest> exchange_dest(const PerftestDest& mine);
  Result<PerftestResults> exchange_results(const PerftestResults& mine);
  // Writes "done"; the peer's is read for up to 2 s but not required (perftest never reads it).
  Status exchange_done();

  const std::string& remote_version() const { return remote_version_; }
  const cm::Ece& remote_ece() const { return remote_ece_; }
  // For a server that read the version itself (to tell perftest from other tools).
  void set_remote_version(std::string v) { remote_version_ = std::move(v); }

 private:
  Status swap_bytes(std::span<const std::byte> mine, std::span<std::byte> theirs);

  OobChannel& tcp_;
  OobRole role_;
  int timeout_;
  std::string remote_version_ = kVersion;
  cm::Ece remote_ece_{};
  std::uint32_t cycle_buffer_ = 4096;
};

// Big-endian IEEE 754 bytes of a double (perftest's hton_double) and back.
std::uint64_t double_to_wire(double v);
double double_from_wire(std::uint64_t bits);

}  // namespace roce::client
