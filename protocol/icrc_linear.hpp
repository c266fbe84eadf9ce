// The ICRC's header share by CRC linearity (issue 26). Of the 48 bytes the ICRC starts with for
// IPv4 (8 bytes of ones, the masked IP, UDP and BTH headers; 68 for IPv6), all but 12 (10)
// are the same in every packet of a flow: addresses, ports, P_Key, destination QP, and the
// fields the ICRC masks to ones. A CRC is affine in its input, so the state after those bytes
// is the state of the flow's template (the varying bytes zeroed), XOR one precomputed table
// entry per varying byte (its value moved through the bytes after it). The template's state is
// computed once per flow and kept in a small cache; a packet whose invariant bytes differ from
// the cached template's (another flow, or a peer varying a field others keep fixed) computes a
// new one. The bytes after the BTH are read where they are, with no masked copy.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "protocol/crc32_short.hpp"
#include "protocol/icrc.hpp"

namespace roce::proto {

class IcrcHeaderCache {
 public:
  // crc32 (zlib convention) after the 0xFF prefix and the masked IP, UDP and BTH headers that
  // `ip` starts with (IPv4 without options, or IPv6 with UDP next). The caller checks that the
  // headers are there. `backend` computes a new template's state.
  std::uint32_t headers_crc(CrcBackend backend, IpVersion v, const std::byte* ip) noexcept;
  // The same flow's IcrcFlow::seed(): crc32(seed, the datagram with its first 64 bytes ANDed
  // with the version's lead mask) is its ICRC (crc32_short.hpp's kernel takes it whole).
  std::uint32_t seed(CrcBackend backend, IpVersion v, const std::byte* ip) noexcept;

  std::uint64_t misses() const { return misses_; }

  // Slots by destination QP and UDP source port: an engine's flows in both directions (its
  // requests and the ACKs it receives, the requests it receives and its answers) hash apart.
  static constexpr std::size_t kEntries = 64;

 private:
  struct Entry {
    std::array<std::uint64_t, 8> invariant{};  // the header's invariant bytes, the rest zero
    std::uint32_t state = 0;                    // CRC register after the template's bytes
    std::uint32_t seed = 0;                     // as IcrcFlow::seed()
    std::uint8_t version = 0;                   // 0: empty
  };
  const Entry& entry(CrcBackend backend, IpVersion v, const std::byte* ip) noexcept;

  std::array<Entry, kEntries> entries_{};
  std::uint64_t misses_ = 0;
};

// One flow's template state, kept by a sender that knows its flow (a connection's request
// template, request_template.hpp) instead of looked up in a cache per packet.
class IcrcFlow {
 public:
  // From a frame of the flow: `ip` as headers_crc takes it. `linear` false: prefix() is the
  // plain icrc_prefix (the switch TransportTuning::icrc_linear measures).
  void set(CrcBackend backend, IpVersion v, const std::byte* ip, bool linear = true) noexcept;
  // icrc_prefix (icrc.hpp)'s value for a datagram of this flow (its invariant header bytes
  // those set() saw; the caller keeps them so). Linear, with the ISA-L backend and up to
  // kCrc32ShortMax bytes: the kernel over the whole prefix from seed(), as compute_icrc_linear.
  std::uint32_t prefix(CrcBackend backend, ByteSpan datagram, std::size_t upto) const noexcept;
  // With `linear`: crc32 (zlib convention) after the 0xFF prefix and the masked headers of a
  // datagram of this flow starting at `ip`, headers_bytes() long; continuing it with crc32()
  // over the datagram's next bytes gives prefix()'s value (IcrcSealBatch hands the rest to
  // crc32_short.hpp's kernel).
  bool linear() const noexcept { return linear_; }
  std::uint32_t headers(const std::byte* ip) const noexcept;
  std::size_t headers_bytes() const noexcept;
  // With `linear`: a datagram's ICRC is crc32(seed(), the datagram with its first 64 bytes ANDed
  // with lead_mask()). The mask keeps the headers' varying bytes and zeroes the rest of them
  // (their share is the flow's state); the seed is that state taken back over the headers'
  // length, so that the headers' bytes carry it forward again (crc32_short.hpp's kernel takes
  // the whole datagram in one go).
  std::uint32_t seed() const noexcept { return seed_; }
  const Crc32LeadMask& lead_mask() const noexcept;

 private:
  std::uint32_t state_ = 0;
  std::uint32_t seed_ = 0;
  IpVersion version_ = IpVersion::V4;
  bool linear_ = true;
};

// compute_icrc (icrc.hpp) with the headers' share taken from `cache`; the same value for every
// input compute_icrc accepts. With the ISA-L backend, a datagram (or prefix) of up to
// kCrc32ShortMax bytes goes whole through crc32_short.hpp's kernel where the CPU has it (its
// headers masked by the lead mask, the flow's share in the seed), as IcrcSealBatch seals a
// run's; otherwise, and without the kernel, the 12 look-ups and ISA-L for the rest.
std::uint32_t compute_icrc_linear(IcrcHeaderCache& cache, CrcBackend backend, IpVersion v, ByteSpan datagram) noexcept;
// icrc_prefix (icrc.hpp) the same way.
std::uint32_t icrc_prefix_linear(IcrcHeaderCache& cache, CrcBackend backend, IpVersion v, ByteSpan datagram,
                                 std::size_t upto) noexcept;

}  // namespace roce::proto
