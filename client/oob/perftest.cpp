#include "client/oob/perftest.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "client/oob/refusal.hpp"
#include "protocol/be.hpp"

namespace roce::client {

namespace {

constexpr std::size_t kVersionBytes = kPerftestVersionBytes;
constexpr std::size_t kDoneBytes = 5;
// How long the client waits for the peer's "done" (see exchange_done).
constexpr int kDoneGraceMs = 2'000;

// As perftest reads them: atof ("6.06" is 6.06, and "5.7" the same as "5.70").
double version_number(const std::string& v) { return std::strtod(v.c_str(), nullptr); }

template <typename T>
std::span<const std::byte> bytes_of(const T& v) {
  return std::as_bytes(std::span{&v, 1});
}

// What follows the version's NUL in a record of ours (perftest_version_record).
struct VersionEce {  // Be types are byte arrays: no padding
  proto::Be24 vendor_id;
  proto::Be32 options;
};
static_assert(sizeof(VersionEce) == 7);

}  // namespace

std::array<char, kPerftestVersionBytes> perftest_version_record(const std::string& version, const cm::Ece& ece) {
  std::array<char, kPerftestVersionBytes> r{};
  const std::size_t text = std::min(version.size(), r.size() - 1);
  std::memcpy(r.data(), version.data(), text);
  if (ece == cm::Ece{} || text + 1 + sizeof(VersionEce) > r.size()) return r;
  VersionEce e;
  e.vendor_id.set(ece.vendor_id);
  e.options.set(ece.options);
  std::memcpy(r.data() + text + 1, &e, sizeof e);
  return r;
}

cm::Ece perftest_version_ece(const std::array<char, kPerftestVersionBytes>& record) {
  const auto nul = std::find(record.begin(), record.end(), '\0');
  const std::size_t at = static_cast<std::size_t>(nul - record.begin()) + 1;
  if (at + sizeof(VersionEce) > record.size()) return {};
  VersionEce e;
  std::memcpy(&e, record.data() + at, sizeof e);
  return cm::Ece{e.vendor_id.get(), e.options.get()};
}

Status check_remote_version(const std::string& v) {
  // perftest 4.5 itself stops there (check_version_compatibility): "not compatible with versions
  // older than 5.70". An empty or unreadable version is another program altogether.
  if (!(version_number(v) > 0))
    return make_error(EPROTO, "the peer's first 16 bytes are no perftest version ('" + v +
                                  "'): it is not a perftest program in its default exchange (-R, --dont_xchg_versions?)");
  if (compare_versions(v, kOldestPeerVersion) < 0)
    return make_error(EPROTO, "the peer speaks perftest exchange version " + v + "; perftest 4.5 (" +
                                  PerftestSession::kVersion + ") and this tool talk to " + kOldestPeerVersion +
                                  " and newer only");
  return {};
}

int compare_versions(const std::string& a, const std::string& b) {
  const double x = version_number(a), y = version_number(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

std::uint64_t double_to_wire(double v) { return std::bit_cast<std::uint64_t>(v); }
double double_from_wire(std::uint64_t bits) { return std::bit_cast<double>(bits); }

Status PerftestSession::swap_bytes(std::span<const std::byte> mine, std::span<std::byte> theirs) {
  if (role_ == OobRole::Client) {
    if (Status s = tcp_.write_all(mine); !s) return s;
    // A refusal may be shorter than the record (the bytes that came are in `theirs` even when
    // the read fails on the server's close).
    const Status s = tcp_.read_exact(theirs, timeout_);
    if (auto why = read_refusal(theirs, tcp_)) return make_error(ECONNREFUSED, "the server refused: " + *why);
    return s;
  }
  if (Status s = tcp_.read_exact(theirs, timeout_); !s) return s;
  return tcp_.write_all(mine);
}

Status PerftestSession::exchange_versions(const cm::Ece& ece) {
  const std::array<char, kVersionBytes> mine = perftest_version_record(kVersion, ece);
  std::array<char, kVersionBytes> theirs{};
  if (Status s = swap_bytes(std::as_bytes(std::span{mine}), std::as_writable_bytes(std::span{theirs})); !s) return s;
  theirs.back() = '\0';
  remote_version_ = theirs.data();
  remote_ece_ = perftest_version_ece(theirs);
  return check_remote_version(remote_version_);
}

Status PerftestSession::exchange_sizes(std::uint32_t cycle_buffer, std::uint32_t cache_line) {
  cycle_buffer_ = cycle_buffer;
  if (compare_versions(remote_version_, "5.32") < 0) return {};
  std::array<std::uint32_t, 2> theirs_host{};
  for (std::size_t i = 0; i < 2; ++i) {
    const proto::Be32 mine = proto::Be32::of(i == 0 ? cycle_buffer : cache_line);
    proto::Be32 theirs;
    if (Status s = swap_bytes(bytes_of(mine), std::as_writable_bytes(std::span{&theirs, 1})); !s) return s;
    theirs_host[i] = theirs.get();
  }
  if (theirs_host[0] > kMaxCycleBuffer)
    return make_error(EPROTO, "the peer's cycle buffer of " + std::to_string(theirs_host[0]) + " bytes is more than " +
                                  std::to_string(kMaxCycleBuffer) + " (perftest sends its page size)");
  cycle_buffer_ = std::max(cycle_buffer, theirs_host[0]);
  return {};
}

Result<ibv_mtu> PerftestSession::exchange_mtu(ibv_mtu mine) {
  const std::array<char, 2> out{static_cast<char>('0' + static_cast<int>(mine)), '\0'};
  std::array<char, 2> in{};
  if (Status s = swap_bytes(std::as_bytes(std::span{out}), std::as_writable_bytes(std::span{in})); !s) return s.error();
  const int theirs = in[0] - '0';
  if (theirs < IBV_MTU_256 || theirs > IBV_MTU_4096)
    return make_error(EPROTO, std::string("the peer sent MTU '") + in[0] + "', not 1..5");
  return static_cast<ibv_mtu>(std::min<int>(theirs, static_cast<int>(mine)));
}

Result<PerftestDest> PerftestSession::exchange_dest(const PerftestDest& mine) {
  const std::string rec = format_perftest(mine);
  std::string in(rec.size(), '\0');
  if (Status s = swap_bytes(std::as_bytes(std::span{rec}), std::as_writable_bytes(std::span{in})); !s) return s.error();
  return parse_perftest(std::as_bytes(std::span{in}));
}

Result<PerftestResults> PerftestSession::exchange_results(const PerftestResults& mine) {
  PerftestResults theirs;
  const bool wide_iters = compare_versions(remote_version_, "5.33") >= 0;
  auto swap64 = [&](std::uint64_t v, std::uint64_t& out) -> Status {
    const proto::Be64 m = proto::Be64::of(v);
    proto::Be64 t;
    if (Status s = swap_bytes(bytes_of(m), std::as_writable_bytes(std::span{&t, 1})); !s) return s;
    out = t.get();
    return {};
  };
  std::uint64_t peak, avg, rate;
  if (Status s = swap64(mine.size, theirs.size); !s) return s.error();
  if (wide_iters) {
    if (Status s = swap64(mine.iters, theirs.iters); !s) return s.error();
  } else {
    const proto::Be32 m = proto::Be32::of(static_cast<std::uint32_t>(mine.iters));
    proto::Be32 t;
    if (Status s = swap_bytes(bytes_of(m), std::as_writable_bytes(std::span{&t, 1})); !s) return s.error();
    theirs.iters = t.get();
  }
  if (Status s = swap64(double_to_wire(mine.bw_peak), peak); !s) return s.error();
  if (Status s = swap64(double_to_wire(mine.bw_avg), avg); !s) return s.error();
  if (Status s = swap64(double_to_wire(mine.msg_rate), rate); !s) return s.error();
  theirs.bw_peak = double_from_wire(peak);
  theirs.bw_avg = double_from_wire(avg);
  theirs.msg_rate = double_from_wire(rate);
  return theirs;
}

Status PerftestSession::exchange_done() {
  static constexpr char kDone[kDoneBytes] = {'d', 'o', 'n', 'e', '\0'};
  if (Status s = tcp_.write_all(std::as_bytes(std::span{kDone})); !s) return s;
  // perftest writes its "done" and closes without reading the peer's: the run is over once ours
  // is written. We still read theirs for a moment, so that our close finds nothing unread and
  // does not reset a peer still reading ours. Its absence is no failure: when perftest's "done"
  // is lost, ours reaches its closed socket and the only answer is a reset, which can be lost
  // too (5 % netem loss against rxe: the client then waited out the whole exchange timeout).
  std::array<char, kDoneBytes> in{};
  (void)tcp_.read_exact(std::as_writable_bytes(std::span{in}), std::min(timeout_, kDoneGraceMs));
  return {};
}

}  // namespace roce::client
