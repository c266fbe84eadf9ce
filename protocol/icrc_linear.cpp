#include "protocol/icrc_linear.hpp"

#include <bit>
#include <cstring>

#include "protocol/headers.hpp"

namespace roce::proto {
namespace {

constexpr std::size_t kFfPrefix = 8;
constexpr std::size_t kTableRest = 16;  // fewer bytes after the BTH go through the portable CRC
constexpr std::uint32_t kReflectedPoly = 0xEDB88320u;

// What each header byte is to the ICRC, by offset from the first byte of the IP header.
enum class Role : std::uint8_t {
  Invariant,  // the same in every packet of a flow, read into the template
  Ones,       // masked to ones by the ICRC (variant fields the network may change)
  Varying,    // differs from packet to packet: lengths, IPv4 ID, opcode, pad count, AckReq, PSN
  HighNibble, // IPv6 byte 0: version (invariant) over the top of the traffic class (ones)
};

template <std::size_t N>
struct Layout {
  std::array<Role, N> role{};
  std::size_t varying = 0;
  std::array<std::uint8_t, 12> varying_at{};  // offsets of the varying bytes, in order
};

template <std::size_t N>
constexpr Layout<N> finish(Layout<N> l) {
  for (std::size_t i = 0; i < N; ++i)
    if (l.role[i] == Role::Varying) l.varying_at[l.varying++] = static_cast<std::uint8_t>(i);
  return l;
}

constexpr std::size_t kUdp = sizeof(UdpHeader), kBth = sizeof(Bth);
constexpr std::size_t kHeadersV4 = kIpv4HeaderBytes + kUdp + kBth;  // 40
constexpr std::size_t kHeadersV6 = kIpv6HeaderBytes + kUdp + kBth;  // 60

// The UDP header and the BTH after an IP header of `ip` bytes.
template <std::size_t N>
constexpr void udp_and_bth(Layout<N>& l, std::size_t ip) {
  const std::size_t u = ip, b = ip + kUdp;
  l.role[u + offsetof(UdpHeader, length)] = l.role[u + offsetof(UdpHeader, length) + 1] = Role::Varying;
  l.role[u + offsetof(UdpHeader, checksum)] = l.role[u + offsetof(UdpHeader, checksum) + 1] = Role::Ones;
  l.role[b + 0] = l.role[b + 1] = Role::Varying;  // opcode; SE, MigReq, PadCnt, TVer
  l.role[b + offsetof(Bth, resv8a)] = Role::Ones;  // FECN, BECN, Resv6
  for (std::size_t i = 8; i < 12; ++i) l.role[b + i] = Role::Varying;  // AckReq, Resv7, PSN
}

constexpr Layout<kHeadersV4> layout_v4() {
  Layout<kHeadersV4> l;
  l.role[offsetof(Ipv4Header, tos)] = Role::Ones;
  l.role[offsetof(Ipv4Header, ttl)] = Role::Ones;
  l.role[offsetof(Ipv4Header, checksum)] = l.role[offsetof(Ipv4Header, checksum) + 1] = Role::Ones;
  for (std::size_t i = 0; i < 2; ++i) {
    l.role[offsetof(Ipv4Header, total_length) + i] = Role::Varying;
    l.role[offsetof(Ipv4Header, id) + i] = Role::Varying;
  }
  udp_and_bth(l, kIpv4HeaderBytes);
  return finish(l);
}

constexpr Layout<kHeadersV6> layout_v6() {
  Layout<kHeadersV6> l;
  l.role[0] = Role::HighNibble;
  l.role[1] = l.role[2] = l.role[3] = Role::Ones;  // traffic class, flow label
  l.role[offsetof(Ipv6Header, payload_length)] = l.role[offsetof(Ipv6Header, payload_length) + 1] = Role::Varying;
  l.role[offsetof(Ipv6Header, hop_limit)] = Role::Ones;
  udp_and_bth(l, kIpv6HeaderBytes);
  return finish(l);
}

constexpr auto kLayoutV4 = layout_v4();
constexpr auto kLayoutV6 = layout_v6();
static_assert(kLayoutV4.varying == 12 && kLayoutV6.varying == 10);

// The header as the ICRC sees it, bytes the ICRC masks set to ones, and which bits of it the
// template compares and keeps.
template <std::size_t N>
struct Masks {
  std::array<std::uint8_t, N> ones{}, keep{};
};

template <std::size_t N>
constexpr Masks<N> masks_of(const Layout<N>& l) {
  Masks<N> m;
  for (std::size_t i = 0; i < N; ++i) {
    switch (l.role[i]) {
      case Role::Invariant: m.keep[i] = 0xFF; break;
      case Role::Ones: m.ones[i] = 0xFF; break;
      case Role::Varying: break;
      case Role::HighNibble:
        m.ones[i] = 0x0F;
        m.keep[i] = 0xF0;
        break;
    }
  }
  return m;
}

constexpr auto kMasksV4 = masks_of(kLayoutV4);
constexpr auto kMasksV6 = masks_of(kLayoutV6);

// `keep` as little-endian words for the comparison: 8-byte words, then a 4-byte tail.
template <std::size_t N>
constexpr std::array<std::uint64_t, 8> keep_words(const Masks<N>& m) {
  std::array<std::uint64_t, 8> w{};
  for (std::size_t i = 0; i < N; ++i) w[i / 8] |= std::uint64_t{m.keep[i]} << (8 * (i % 8));
  return w;
}

constexpr auto kKeepV4 = keep_words(kMasksV4);
constexpr auto kKeepV6 = keep_words(kMasksV6);
static_assert(kHeadersV4 % 8 == 0 && kHeadersV6 % 8 == 4);

constexpr std::array<std::uint32_t, 256> byte_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kReflectedPoly : c >> 1;
    t[i] = c;
  }
  return t;
}

constexpr auto kByteTable = byte_table();

// Entry [i][b]: what byte value b at the i-th varying offset adds to the CRC register after
// the whole header: the byte entered into a zero register, then the header's later bytes as
// zeros (a CRC register is linear in the data once the initial value is accounted for).
template <std::size_t N, std::size_t V>
constexpr std::array<std::array<std::uint32_t, 256>, V> varying_tables(const Layout<N>& l) {
  std::array<std::array<std::uint32_t, 256>, V> t{};
  for (std::size_t i = 0; i < V; ++i) {
    const std::size_t zeros = N - 1 - l.varying_at[i];
    for (std::uint32_t b = 0; b < 256; ++b) {
      std::uint32_t r = kByteTable[b];
      for (std::size_t z = 0; z < zeros; ++z) r = (r >> 8) ^ kByteTable[r & 0xFF];
      t[i][b] = r;
    }
  }
  return t;
}

constexpr auto kTablesV4 = varying_tables<kHeadersV4, 12>(kLayoutV4);
constexpr auto kTablesV6 = varying_tables<kHeadersV6, 10>(kLayoutV6);

std::uint64_t load64(const std::byte* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::uint32_t load32(const std::byte* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The header's invariant bits as words; N is 40 or 60.
template <std::size_t N>
std::array<std::uint64_t, 8> invariant_words(const std::byte* ip, const std::array<std::uint64_t, 8>& keep) noexcept {
  std::array<std::uint64_t, 8> w{};
  for (std::size_t i = 0; i < N / 8; ++i) w[i] = load64(ip + 8 * i) & keep[i];
  if constexpr (N % 8 == 4) w[N / 8] = load32(ip + N - 4) & keep[N / 8];
  return w;
}

// Non-zero unless the header's invariant bits are `inv` (an entry's invariant_words). Read
// from the header itself: the words built on the stack and compared there were stored 8 bytes
// at a time and read back 16 at a time, a store-forwarding stall on every packet (a fifth of
// headers_crc; docs/perf-changes.md section 31).
template <std::size_t N>
std::uint64_t invariant_diff(const std::byte* ip, const std::array<std::uint64_t, 8>& keep,
                             const std::array<std::uint64_t, 8>& inv) noexcept {
  std::uint64_t d = 0;
  for (std::size_t i = 0; i < N / 8; ++i) d |= (load64(ip + 8 * i) & keep[i]) ^ inv[i];
  if constexpr (N % 8 == 4) d |= (load32(ip + N - 4) & keep[N / 8]) ^ inv[N / 8];
  return d;
}

// The register after the prefix and the template: the header with its masked bytes set to
// ones and its varying bytes zero.
template <std::size_t N>
std::uint32_t template_state(CrcBackend backend, const std::byte* ip, const Masks<N>& m) noexcept {
  std::array<std::byte, kFfPrefix + N> t;
  std::memset(t.data(), 0xFF, kFfPrefix);
  for (std::size_t i = 0; i < N; ++i)
    t[kFfPrefix + i] = std::byte{static_cast<std::uint8_t>((static_cast<std::uint8_t>(ip[i]) & m.keep[i]) | m.ones[i])};
  return ~crc32(backend, 0, t.data(), t.size());
}

template <std::size_t N, std::size_t V>
std::uint32_t add_varying(std::uint32_t state, const std::byte* ip, const Layout<N>& l,
                          const std::array<std::array<std::uint32_t, 256>, V>& tables) noexcept {
  for (std::size_t i = 0; i < V; ++i) state ^= tables[i][static_cast<std::uint8_t>(ip[l.varying_at[i]])];
  return state;
}

// The register r with r x^(8 n) the given one: n bytes' worth of x^-1 (x^-1 = (P - 1) / x;
// a register with its x^0 term set takes P before the division).
constexpr std::uint32_t back_over(std::uint32_t reg, std::size_t n) noexcept {
  for (std::size_t i = 0; i < 8 * n; ++i) reg = (reg & 0x80000000u) ? ((reg ^ kReflectedPoly) << 1) | 1u : reg << 1;
  return reg;
}

// a b mod P, both registers (bit 31 - d the coefficient of x^d).
constexpr std::uint32_t mul_mod(std::uint32_t a, std::uint32_t b) noexcept {
  std::uint32_t r = 0;
  for (int d = 0; d < 32; ++d) {
    r ^= b & (0u - ((a >> (31 - d)) & 1u));
    b = (b >> 1) ^ (kReflectedPoly & (0u - (b & 1u)));  // b x
  }
  return r;
}

// x^-(8 n) mod P for the headers' n bytes: a flow's seed is its state times it (a cache miss
// pays 32 steps, not back_over's 320 or 480).
constexpr std::uint32_t kBackV4 = back_over(0x80000000u, kHeadersV4);
constexpr std::uint32_t kBackV6 = back_over(0x80000000u, kHeadersV6);
static_assert(mul_mod(kBackV4, 0x12345678u) == back_over(0x12345678u, kHeadersV4));

// IcrcFlow::seed() of a flow whose template leaves the register `state` after the headers.
std::uint32_t seed_of(std::uint32_t state, IpVersion v) noexcept {
  return ~mul_mod(state, v == IpVersion::V4 ? kBackV4 : kBackV6);
}

// What of the headers the kernel reads: the varying bytes; a header's other bytes are in the
// flow's state. Offsets 64.. of the mask are the datagram's first bytes.
template <std::size_t N>
constexpr Crc32LeadMask lead_of(const Layout<N>& l) {
  Crc32LeadMask m{};
  for (auto& b : m.bytes) b = 0xFF;
  for (std::size_t i = 0; i < N; ++i) m.bytes[64 + i] = l.role[i] == Role::Varying ? 0xFF : 0x00;
  return m;
}

constexpr Crc32LeadMask kLeadV4 = lead_of(kLayoutV4);
constexpr Crc32LeadMask kLeadV6 = lead_of(kLayoutV6);
static_assert(kHeadersV6 <= 64);

const Crc32LeadMask& lead_of(IpVersion v) noexcept { return v == IpVersion::V4 ? kLeadV4 : kLeadV6; }

// Whether a single ICRC of `upto` bytes of `datagram` goes whole through the kernel: it replaces
// ISA-L (the other backends stay what they are, the references), up to its length, for a whole
// short datagram only. The prefix of a longer one (a deferred or copying CRC, 1 KiB and more)
// keeps the look-ups: through the kernel it cost the 4 KiB responder about a sixth of its rate
// (perf_suite --only responder, --icrc-clmul on/off alternating, 91 against 104-110 Gbit/s).
bool whole_by_kernel(CrcBackend backend, ByteSpan datagram, std::size_t upto) noexcept {
  return backend == CrcBackend::Isal && upto == datagram.size() && upto <= kCrc32ShortMax && crc32_short_has_clmul();
}

}  // namespace

const IcrcHeaderCache::Entry& IcrcHeaderCache::entry(CrcBackend backend, IpVersion v, const std::byte* ip) noexcept {
  const bool v4 = v == IpVersion::V4;
  // The slot: destination QP, UDP source port and source address, the fields that tell flows
  // apart. The address keeps a request flow and its ACKs apart when both ends use the same QPN
  // (the source port is often a hash of the QPN pair, the same both ways).
  const std::size_t ip_len = ip_header_bytes(v);
  const std::size_t src_last = v4 ? offsetof(Ipv4Header, src) + 3 : offsetof(Ipv6Header, src) + 15;
  const std::uint32_t key = static_cast<std::uint32_t>(static_cast<std::uint8_t>(ip[ip_len + kUdp + offsetof(Bth, dest_qp) + 2])) |
                            static_cast<std::uint32_t>(static_cast<std::uint8_t>(ip[ip_len + offsetof(UdpHeader, src_port) + 1])) << 8 |
                            static_cast<std::uint32_t>(static_cast<std::uint8_t>(ip[src_last])) << 16;
  // Four ways a set: a direct-mapped slot thrashed whenever two busy flows hashed alike (16 QPs
  // taking WRITEs and their 16 ACK flows, 32 flows in 64 slots: a template recomputed for a
  // sixth of the packets, docs/perf-changes.md section 27).
  constexpr std::size_t kWays = 4;
  static_assert(kEntries == 64);
  Entry* set = &entries_[((key * 0x9E3779B1u) >> 28) * kWays];  // Fibonacci hashing onto 16 sets
  Entry* e = nullptr;
  for (std::size_t w = 0; w < kWays; ++w) {
    if (set[w].version != static_cast<std::uint8_t>(v)) continue;
    const std::uint64_t diff = v4 ? invariant_diff<kHeadersV4>(ip, kKeepV4, set[w].invariant)
                                  : invariant_diff<kHeadersV6>(ip, kKeepV6, set[w].invariant);
    if (diff == 0) {
      e = &set[w];
      break;
    }
  }
  if (e == nullptr) {
    // An empty way, else one in turn (the miss count is as good a turn as any).
    e = &set[misses_ % kWays];
    for (std::size_t w = 0; w < kWays; ++w)
      if (set[w].version == 0) {
        e = &set[w];
        break;
      }
    ++misses_;
    e->invariant = v4 ? invariant_words<kHeadersV4>(ip, kKeepV4) : invariant_words<kHeadersV6>(ip, kKeepV6);
    e->version = static_cast<std::uint8_t>(v);
    e->state = v4 ? template_state(backend, ip, kMasksV4) : template_state(backend, ip, kMasksV6);
    e->seed = seed_of(e->state, v);
  }
  return *e;
}

std::uint32_t IcrcHeaderCache::headers_crc(CrcBackend backend, IpVersion v, const std::byte* ip) noexcept {
  const std::uint32_t state = entry(backend, v, ip).state;
  return ~(v == IpVersion::V4 ? add_varying(state, ip, kLayoutV4, kTablesV4) : add_varying(state, ip, kLayoutV6, kTablesV6));
}

std::uint32_t IcrcHeaderCache::seed(CrcBackend backend, IpVersion v, const std::byte* ip) noexcept {
  return entry(backend, v, ip).seed;
}

std::uint32_t compute_icrc_linear(IcrcHeaderCache& cache, CrcBackend backend, IpVersion v, ByteSpan datagram) noexcept {
  return icrc_prefix_linear(cache, backend, v, datagram, datagram.size());
}

namespace {

// The bytes after the headers, from `crc` (the register after them, finished).
std::uint32_t after_headers(std::uint32_t crc, CrcBackend backend, IpVersion v, ByteSpan datagram,
                            std::size_t upto) noexcept {
  const std::size_t fixed = ip_header_bytes(v) + kUdp + kBth;
  const std::size_t rest = upto - fixed;
  // A few bytes (an ACK's AETH) cost ISA-L its setup and reduction; table lookups take them for
  // less. Every backend computes the same CRC.
  if (rest < kTableRest) return crc32_portable(crc, datagram.data() + fixed, rest);
  return crc32(backend, crc, datagram.data() + fixed, rest);
}

}  // namespace

std::uint32_t icrc_prefix_linear(IcrcHeaderCache& cache, CrcBackend backend, IpVersion v, ByteSpan datagram,
                                 std::size_t upto) noexcept {
  static_assert(kHeadersV4 >= kCrc32ShortMin);
  if (whole_by_kernel(backend, datagram, upto))
    return crc32_short_lead(cache.seed(backend, v, datagram.data()), datagram.data(), upto, lead_of(v));
  return after_headers(cache.headers_crc(backend, v, datagram.data()), backend, v, datagram, upto);
}


void IcrcFlow::set(CrcBackend backend, IpVersion v, const std::byte* ip, bool linear) noexcept {
  version_ = v;
  linear_ = linear;
  state_ = v == IpVersion::V4 ? template_state(backend, ip, kMasksV4) : template_state(backend, ip, kMasksV6);
  seed_ = seed_of(state_, v);
}

const Crc32LeadMask& IcrcFlow::lead_mask() const noexcept { return lead_of(version_); }

std::uint32_t IcrcFlow::headers(const std::byte* ip) const noexcept {
  return ~(version_ == IpVersion::V4 ? add_varying(state_, ip, kLayoutV4, kTablesV4) : add_varying(state_, ip, kLayoutV6, kTablesV6));
}

std::size_t IcrcFlow::headers_bytes() const noexcept { return version_ == IpVersion::V4 ? kHeadersV4 : kHeadersV6; }

std::uint32_t IcrcFlow::prefix(CrcBackend backend, ByteSpan datagram, std::size_t upto) const noexcept {
  if (!linear_)
    return upto == datagram.size() ? compute_icrc(backend, version_, datagram) : icrc_prefix(backend, version_, datagram, upto);
  if (whole_by_kernel(backend, datagram, upto)) return crc32_short_lead(seed_, datagram.data(), upto, lead_of(version_));
  const std::byte* ip = datagram.data();
  const std::uint32_t crc = ~(version_ == IpVersion::V4 ? add_varying(state_, ip, kLayoutV4, kTablesV4)
                                                        : add_varying(state_, ip, kLayoutV6, kTablesV6));
  return after_headers(crc, backend, version_, datagram, upto);
}

}  // namespace roce::proto
