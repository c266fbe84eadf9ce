#include "apps/gen/raw/raw_options.hpp"

#include <arpa/inet.h>

#include <cmath>
#include <cstdio>
#include <cxxopts.hpp>
#include <exception>
#include <limits>

#include "protocol/mtu.hpp"
#include "protocol/opcode.hpp"

namespace roce::gen {

namespace {

using namespace roce::proto;

constexpr const char* kProg = "roce-gen raw";

constexpr const char* kDescription =
    "Crafts a stream of RoCEv2 packets, pktgen-style, and writes it to a pcap file or sends it\n"
    "out of a DPDK port at a chosen rate. Every header field can be set: the opcode (or a list of\n"
    "opcodes used in turn), the BTH, each extension header, the PSN pattern, the payload, ECN\n"
    "marks and deliberately wrong ICRCs. The packets are valid RoCEv2 unless you ask for errors.\n";

constexpr const char* kMore = R"(
Outputs (exactly one):
  --pcap FILE   no DPDK needed; each packet is stamped with its departure time at the rate
                (nanosecond pcap; default rate 1 Mpps). Open it with Wireshark, tshark or
                roce-inspect.
  --dev PORT    DPDK port name or number. DPDK's own options come first, then `--`:
                  roce-gen --no-huge --no-pci -m 512 --vdev=net_tap0,iface=craft0 -- \
                           raw --dev net_tap0 --pps 100k --count 10000
                Without a rate the port is fed as fast as it takes packets.

Counting "every N": --ce-every 10 marks packets 10, 20, 30, ... (so exactly count/10 of them);
--bad-icrc-every, --psn-gap-every and --psn-dup-every count the same way. A packet due for a
duplicate PSN repeats the previous packet's PSN; a gap skips --psn-gap PSNs first.

Extension headers: each packet carries the ones its opcode has (--list-opcodes shows which),
with the field values given above.

Payload sizes: ONLY and LAST packets carry --size bytes, FIRST and MIDDLE exactly --mtu,
RC_ATOMIC_WRITE 8, and opcodes without payload (READ requests, ACKs, atomics, CNP) none. The
RETH DMA length defaults to the packet's payload (READ requests: --size).

Old spellings still accepted: --port (--dev), --pmtu (--mtu). -p is not the DPDK port: it
is the TCP port in the other tools.

Numbers may be decimal or 0x-hex; --pps and --gbps take a decimal with an optional k, M or G.
Exit status: 0 done, 1 the run could not be finished, 2 bad command line (an option, a DPDK
argument, or a port or file that cannot be used).

Examples:
  roce-gen raw --pcap w.pcap --opcode RC_RDMA_WRITE_ONLY --size 4096 --mtu 4096 --gbps 100
  roce-gen raw --pcap psn.pcap --psn-mode wrap --psn-dup-every 5 --ce-every 3 --count 40
  roce-gen raw --pcap all.pcap --opcode all --bad-icrc-every 7 --vlan 100 --pcp 3
  roce-gen raw --list-opcodes
)";

struct ParseFailure {
  std::string message;
};

[[noreturn]] void fail(std::string msg) { throw ParseFailure{std::move(msg)}; }

std::uint64_t parse_uint(const std::string& opt, const std::string& text, std::uint64_t max) {
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const std::string digits = hex ? text.substr(2) : text;
  if (digits.empty() || digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") != std::string::npos)
    fail("--" + opt + ": '" + text + "' is not a number");
  std::uint64_t v = 0;
  try {
    v = std::stoull(digits, nullptr, hex ? 16 : 10);
  } catch (const std::exception&) {
    fail("--" + opt + ": '" + text + "' is too large");
  }
  if (v > max) {
    char buf[32];
    std::snprintf(buf, sizeof buf, hex ? "0x%llX" : "%llu", static_cast<unsigned long long>(max));
    fail("--" + opt + ": " + text + " is above " + buf);
  }
  return v;
}

// A decimal >= 0.
double parse_decimal(const std::string& opt, const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v) || v < 0)
    fail("--" + opt + ": '" + text + "' is not a number >= 0");
  return v;
}

// A positive decimal with an optional k/M/G multiplier.
double parse_scaled(const std::string& opt, const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  double scale = 1;
  if (used && used + 1 == text.size()) {
    switch (text.back()) {
      case 'k': case 'K': scale = 1e3; break;
      case 'm': case 'M': scale = 1e6; break;
      case 'g': case 'G': scale = 1e9; break;
      default: used = 0;
    }
    if (used) ++used;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v)) fail("--" + opt + ": '" + text + "' is not a number");
  if (!(v > 0)) fail("--" + opt + ": must be positive, got " + text);
  return v * scale;
}

MacAddr parse_mac(const std::string& opt, const std::string& text) {
  MacAddr m{};
  unsigned b[6];
  char tail = 0;
  if (std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
    fail("--" + opt + ": '" + text + "' is not a MAC address like 02:00:00:00:00:01");
  for (int i = 0; i < 6; ++i) m[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(b[i]);
  return m;
}

struct IpText {
  IpVersion version;
  Ipv4Addr v4{};
  Ipv6Addr v6{};
};

IpText parse_ip(const std::string& opt, const std::string& text) {
  IpText ip{IpVersion::V4};
  if (::inet_pton(AF_INET, text.c_str(), ip.v4.data()) == 1) return ip;
  ip.version = IpVersion::V6;
  if (::inet_pton(AF_INET6, text.c_str(), ip.v6.data()) == 1) return ip;
  fail("--" + opt + ": '" + text + "' is not an IPv4 or IPv6 address");
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    const auto at = s.find(sep, from);
    out.push_back(s.substr(from, at - from));
    if (at == std::string::npos) return out;
    from = at + 1;
  }
}

void set_opcodes(RawStreamSpec& spec, const std::string& text) {
  if (text == "all") {
    spec.opcodes = all_opcodes();
    return;
  }
  spec.opcodes.clear();
  for (const std::string& name : split(text, ',')) {
    const auto op = opcode_from_string(name);
    if (!op) fail("--opcode: '" + name + "' is not an opcode of the table (see --list-opcodes)");
    spec.opcodes.push_back(*op);
  }
}

void set_vlans(RawStreamSpec& spec, const std::string& text, std::uint64_t pcp) {
  const auto ids = split(text, ',');
  if (ids.size() > 2) fail("--vlan: at most two tags (outer,inner), got " + std::to_string(ids.size()));
  spec.eth.vlan_count = static_cast<std::uint8_t>(ids.size());
  // One tag is 802.1Q; two are 802.1ad (QinQ): an S-tag outside a C-tag.
  spec.eth.vlan_tpid = ids.size() == 2 ? std::array<std::uint16_t, 2>{kEtherTypeQinQ, kEtherTypeVlan}
                                       : std::array<std::uint16_t, 2>{kEtherTypeVlan, kEtherTypeVlan};
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto vid = parse_uint("vlan", ids[i], 4094);
    spec.eth.vlan_tci[i] = static_cast<std::uint16_t>(pcp << 13 | vid);
  }
}

void add_options(cxxopts::Options& o) {
  o.add_options("Output")
      ("w,pcap", "write the packets to this pcap file (no DPDK needed)", cxxopts::value<std::string>(), "FILE")
      ("dev", "send on this DPDK port (name or number; DPDK options go before `--`)", cxxopts::value<std::string>(), "PORT")
      ("c,count", "packets to craft (--dev: 0 = until --duration or Ctrl-C)", cxxopts::value<std::string>()->default_value("1000"), "N")
      ("D,duration", "with --dev: stop after this many seconds", cxxopts::value<std::string>(), "SEC")
      ("start-time", "--pcap: first timestamp, seconds since 1970 (default now)", cxxopts::value<std::string>(), "SEC")
      ("pps", "rate in packets per second (e.g. 500k, 1.5M)", cxxopts::value<std::string>(), "RATE")
      ("gbps", "rate in Gb/s on the wire (packet + FCS, preamble and gap: 24 bytes)", cxxopts::value<std::string>(), "RATE");
  o.add_options("Ethernet and IP")
      ("src-mac", "source MAC", cxxopts::value<std::string>()->default_value("02:00:00:00:00:01"), "MAC")
      ("dst-mac", "destination MAC", cxxopts::value<std::string>()->default_value("02:00:00:00:00:02"), "MAC")
      ("vlan", "VLAN ID (one 802.1Q tag) or OUTER,INNER (802.1ad QinQ), 0..4094", cxxopts::value<std::string>(), "VID[,VID]")
      ("pcp", "VLAN priority (PCP) of the tags, 0..7", cxxopts::value<std::string>()->default_value("0"), "N")
      ("src-ip", "source address, IPv4 or IPv6 (same family as --dst-ip)", cxxopts::value<std::string>()->default_value("10.0.0.1"), "IP")
      ("dst-ip", "destination address", cxxopts::value<std::string>()->default_value("10.0.0.2"), "IP")
      ("dscp", "DSCP, 0..63 (the ECN bits come from --ecn)", cxxopts::value<std::string>()->default_value("0"), "N")
      ("ttl", "IPv4 TTL or IPv6 hop limit", cxxopts::value<std::string>()->default_value("64"), "N")
      ("flow-label", "IPv6 flow label, 0..0xFFFFF", cxxopts::value<std::string>()->default_value("0"), "N")
      ("udp-sport", "UDP source port (the destination is always 4791)", cxxopts::value<std::string>()->default_value("0xC000"), "N");
  o.add_options("Base transport header")
      ("o,opcode", "opcode name or number, a comma-separated list used in turn, or 'all' (see --list-opcodes)", cxxopts::value<std::string>()->default_value("RC_RDMA_WRITE_ONLY"), "LIST")
      ("qpn", "destination QP, 24 bits", cxxopts::value<std::string>()->default_value("0x11"), "N")
      ("pkey", "partition key", cxxopts::value<std::string>()->default_value("0xFFFF"), "N")
      ("se", "set the solicited-event bit")
      ("migreq", "set the MigReq bit")
      ("ack-req", "set the AckReq bit")
      ("fecn", "set the FECN bit")
      ("becn", "set the BECN bit")
      ("psn", "first PSN, 24 bits (default 0; wrap mode: 0xFFFFF8)", cxxopts::value<std::string>(), "N")
      ("psn-mode", "increment, fixed (every packet --psn), random (seeded), or wrap (increment across 2^24)", cxxopts::value<std::string>()->default_value("increment"), "MODE")
      ("psn-gap-every", "skip --psn-gap PSNs before every Nth packet", cxxopts::value<std::string>()->default_value("0"), "N")
      ("psn-gap", "PSNs skipped by each gap", cxxopts::value<std::string>()->default_value("1"), "K")
      ("psn-dup-every", "every Nth packet repeats the previous PSN", cxxopts::value<std::string>()->default_value("0"), "N");
  o.add_options("Extension header")
      ("va", "RETH / AtomicETH virtual address", cxxopts::value<std::string>()->default_value("0x10000"), "ADDR")
      ("rkey", "RETH / AtomicETH R_Key", cxxopts::value<std::string>()->default_value("0x1234"), "KEY")
      ("dma-len", "RETH DMA length (default: the payload length; READ requests: --size)", cxxopts::value<std::string>(), "N")
      ("imm", "ImmDt immediate data, 32 bits", cxxopts::value<std::string>()->default_value("0"), "N")
      ("inv-rkey", "IETH R_Key to invalidate", cxxopts::value<std::string>()->default_value("0"), "KEY")
      ("qkey", "DETH Q_Key (UD)", cxxopts::value<std::string>()->default_value("0x11111111"), "KEY")
      ("src-qp", "DETH source QP (UD), 24 bits", cxxopts::value<std::string>()->default_value("0x12"), "N")
      ("syndrome", "AETH syndrome byte (0x00 ACK with credit 0; 0x1f ACK with no credit count; 0x60.. NAKs)", cxxopts::value<std::string>()->default_value("0x1f"), "N")
      ("msn", "AETH MSN, 24 bits", cxxopts::value<std::string>()->default_value("0"), "N")
      ("swap-add", "AtomicETH swap or add data", cxxopts::value<std::string>()->default_value("1"), "N")
      ("compare", "AtomicETH compare data", cxxopts::value<std::string>()->default_value("0"), "N")
      ("orig-data", "AtomicAckETH original remote data", cxxopts::value<std::string>()->default_value("0"), "N")
      ("feth", "FLUSH FETH word (selectivity << 4 | placement)", cxxopts::value<std::string>()->default_value("0x11"), "N");
  o.add_options("Payload")
      ("s,size", "payload bytes of ONLY and LAST packets, 0..PMTU", cxxopts::value<std::string>()->default_value("1024"), "N")
      ("m,mtu", "path MTU: 256, 512, 1024, 2048 or 4096 (payload of FIRST/MIDDLE packets)", cxxopts::value<std::string>()->default_value("1024"), "N")
      ("payload", "payload bytes: zero, inc (0,1,2,...), random (seeded) or a byte value like 0xab", cxxopts::value<std::string>()->default_value("inc"), "PATTERN");
  o.add_options("Marks and errors")
      ("ecn", "ECN codepoint: not-ect (or none), ect0, ect1 or ce", cxxopts::value<std::string>()->default_value("ect0"), "ECN")
      ("ce-every", "every Nth packet carries CE instead", cxxopts::value<std::string>()->default_value("0"), "N")
      ("bad-icrc-every", "every Nth packet carries a wrong ICRC", cxxopts::value<std::string>()->default_value("0"), "N")
      ("seed", "seed of random PSNs and payloads", cxxopts::value<std::string>()->default_value("1"), "N");
  o.add_options("Help")
      ("list-opcodes", "print the opcode table and exit")
      ("h,help", "show this help");
  // Old spellings, kept for scripts (not in the help's groups).
  o.add_options("Aliases")
      ("port", "same as --dev", cxxopts::value<std::string>(), "PORT")
      ("pmtu", "same as --mtu", cxxopts::value<std::string>(), "N")
      ("p", "refused with a pointer to --dev", cxxopts::value<std::string>(), "PORT");
}

// The value of `name` or of its old spelling `alias`, given once.
std::optional<std::string> either(const cxxopts::ParseResult& r, const char* name, const char* alias) {
  if (r.count(name) && r.count(alias)) fail(std::string("--") + alias + " is the old name of --" + name + "; give one of them");
  if (r.count(alias)) return r[alias].as<std::string>();
  if (r.count(name)) return r[name].as<std::string>();
  return std::nullopt;
}

std::string value(const cxxopts::ParseResult& r, const char* name) { return r[name].as<std::string>(); }

RawCommand build(const cxxopts::ParseResult& r) {
  RawCommand c;
  RawStreamSpec& s = c.spec;
  using U64 = std::numeric_limits<std::uint64_t>;
  constexpr std::uint64_t k24 = 0xFFFFFF, k32 = 0xFFFFFFFF, k16 = 0xFFFF;

  if (r.count("p")) fail("-p is the TCP port in the other tools; the DPDK port is --dev PORT");
  const auto dev = either(r, "dev", "port");
  if (r.count("pcap") && dev) fail("give --pcap or --dev, not both");
  if (!r.count("pcap") && !dev) fail("no output: give --pcap FILE or --dev PORT (try --help)");
  if (r.count("pcap")) c.pcap_path = value(r, "pcap");
  if (dev) c.dev = *dev;
  if (c.pcap_path.empty() && r.count("pcap")) fail("--pcap: empty file name");
  c.count = parse_uint("count", value(r, "count"), U64::max());
  if (c.count == 0 && !c.pcap_path.empty()) fail("--count: a pcap file needs at least one packet");
  if (r.count("duration")) {
    if (c.dev.empty()) fail("--duration works with --dev only (a pcap file holds --count packets)");
    c.duration_s = parse_scaled("duration", value(r, "duration"));
  }
  if (r.count("start-time")) {
    if (c.pcap_path.empty()) fail("--start-time works with --pcap only");
    const double secs = parse_decimal("start-time", value(r, "start-time"));
    if (secs > 4e9) fail("--start-time: seconds since 1970, 0 .. 4e9");
    c.start_ns = static_cast<std::int64_t>(std::llround(secs * 1e9));
  }
  if (r.count("pps") && r.count("gbps")) fail("give --pps or --gbps, not both");
  if (r.count("pps")) c.rate = Rate::pps(parse_scaled("pps", value(r, "pps")));
  if (r.count("gbps")) c.rate = Rate::bps(parse_scaled("gbps", value(r, "gbps")) * 1e9);

  s.eth.src = parse_mac("src-mac", value(r, "src-mac"));
  s.eth.dst = parse_mac("dst-mac", value(r, "dst-mac"));
  const auto pcp = parse_uint("pcp", value(r, "pcp"), 7);
  if (r.count("vlan")) set_vlans(s, value(r, "vlan"), pcp);
  else if (pcp) fail("--pcp needs --vlan (the priority travels in the VLAN tag)");
  const IpText src = parse_ip("src-ip", value(r, "src-ip")), dst = parse_ip("dst-ip", value(r, "dst-ip"));
  if (src.version != dst.version)
    fail("--src-ip " + value(r, "src-ip") + " and --dst-ip " + value(r, "dst-ip") + " are not in the same IP family");
  s.ip_version = src.version;
  s.ipv4.src = src.v4;
  s.ipv4.dst = dst.v4;
  s.ipv6.src = src.v6;
  s.ipv6.dst = dst.v6;
  s.dscp = static_cast<std::uint8_t>(parse_uint("dscp", value(r, "dscp"), 63));
  s.ipv4.ttl = s.ipv6.hop_limit = static_cast<std::uint8_t>(parse_uint("ttl", value(r, "ttl"), 255));
  s.ipv6.flow_label = static_cast<std::uint32_t>(parse_uint("flow-label", value(r, "flow-label"), 0xFFFFF));
  s.udp_src_port = static_cast<std::uint16_t>(parse_uint("udp-sport", value(r, "udp-sport"), k16));

  set_opcodes(s, value(r, "opcode"));
  s.dest_qp = static_cast<std::uint32_t>(parse_uint("qpn", value(r, "qpn"), k24));
  s.pkey = static_cast<std::uint16_t>(parse_uint("pkey", value(r, "pkey"), k16));
  s.solicited = r.count("se") > 0;
  s.mig_req = r.count("migreq") > 0;
  s.ack_req = r.count("ack-req") > 0;
  s.fecn = r.count("fecn") > 0;
  s.becn = r.count("becn") > 0;
  const auto mode = psn_mode_from_string(value(r, "psn-mode"));
  if (!mode) fail("--psn-mode: '" + value(r, "psn-mode") + "' is not increment, fixed, random or wrap");
  s.psn_mode = *mode;
  if (r.count("psn")) s.psn_start = static_cast<std::uint32_t>(parse_uint("psn", value(r, "psn"), k24));
  s.psn_gap_every.n = parse_uint("psn-gap-every", value(r, "psn-gap-every"), U64::max());
  s.psn_gap = static_cast<std::uint32_t>(parse_uint("psn-gap", value(r, "psn-gap"), kPsnModulus / 2 - 1));
  if (s.psn_gap == 0) fail("--psn-gap: a gap skips at least one PSN");
  s.psn_dup_every.n = parse_uint("psn-dup-every", value(r, "psn-dup-every"), U64::max());
  if (s.psn_mode != PsnMode::Increment && s.psn_mode != PsnMode::Wrap && (s.psn_gap_every.n || s.psn_dup_every.n))
    fail("--psn-gap-every and --psn-dup-every need --psn-mode increment or wrap");

  s.ext.reth.va.set(parse_uint("va", value(r, "va"), U64::max()));
  s.ext.reth.rkey.set(static_cast<std::uint32_t>(parse_uint("rkey", value(r, "rkey"), k32)));
  if (r.count("dma-len")) {
    const auto len = static_cast<std::uint32_t>(parse_uint("dma-len", value(r, "dma-len"), k32));
    if (len == 0) fail("--dma-len: 0 means 'the payload length'; leave the option out for that");
    s.ext.reth.dma_length.set(len);
  }
  s.ext.atomic.va = s.ext.reth.va;
  s.ext.atomic.rkey = s.ext.reth.rkey;
  const auto imm = static_cast<std::uint32_t>(parse_uint("imm", value(r, "imm"), k32));
  s.ext.imm.bytes = {static_cast<std::uint8_t>(imm >> 24), static_cast<std::uint8_t>(imm >> 16),
                     static_cast<std::uint8_t>(imm >> 8), static_cast<std::uint8_t>(imm)};
  s.ext.ieth.rkey.set(static_cast<std::uint32_t>(parse_uint("inv-rkey", value(r, "inv-rkey"), k32)));
  s.ext.deth.qkey.set(static_cast<std::uint32_t>(parse_uint("qkey", value(r, "qkey"), k32)));
  s.ext.deth.src_qp.set(static_cast<std::uint32_t>(parse_uint("src-qp", value(r, "src-qp"), k24)));
  s.ext.aeth.syndrome = static_cast<std::uint8_t>(parse_uint("syndrome", value(r, "syndrome"), 0xFF));
  s.ext.aeth.msn.set(static_cast<std::uint32_t>(parse_uint("msn", value(r, "msn"), k24)));
  s.ext.atomic.swap_add.set(parse_uint("swap-add", value(r, "swap-add"), U64::max()));
  s.ext.atomic.compare.set(parse_uint("compare", value(r, "compare"), U64::max()));
  s.ext.atomic_ack.original_data.set(parse_uint("orig-data", value(r, "orig-data"), U64::max()));
  s.ext.feth.bits.set(static_cast<std::uint32_t>(parse_uint("feth", value(r, "feth"), k32)));

  const bool old_mtu = r.count("pmtu") > 0;
  const std::string mtu = either(r, "mtu", "pmtu").value_or(value(r, "mtu"));
  s.pmtu = static_cast<std::uint32_t>(parse_uint(old_mtu ? "pmtu" : "mtu", mtu, 4096));
  if (!mtu_from_bytes(s.pmtu)) fail(std::string(old_mtu ? "--pmtu: " : "--mtu: ") + mtu + " is not 256, 512, 1024, 2048 or 4096");
  s.payload_bytes = static_cast<std::uint32_t>(parse_uint("size", value(r, "size"), k32));
  const std::string pattern = value(r, "payload");
  if (pattern == "zero") s.pattern = PayloadPattern::Zero;
  else if (pattern == "inc") s.pattern = PayloadPattern::Increment;
  else if (pattern == "random") s.pattern = PayloadPattern::Random;
  else if (pattern.rfind("0x", 0) == 0 || pattern.find_first_not_of("0123456789") == std::string::npos) {
    s.pattern = PayloadPattern::Byte;
    s.pattern_byte = static_cast<std::uint8_t>(parse_uint("payload", pattern, 0xFF));
  } else {
    fail("--payload: '" + pattern + "' is not zero, inc, random or a byte value");
  }

  const auto ecn = ecn_from_string(value(r, "ecn"));
  if (!ecn) fail("--ecn: '" + value(r, "ecn") + "' is not not-ect, ect0, ect1 or ce");
  s.ecn = *ecn;
  s.ce_every.n = parse_uint("ce-every", value(r, "ce-every"), U64::max());
  s.bad_icrc_every.n = parse_uint("bad-icrc-every", value(r, "bad-icrc-every"), U64::max());
  s.seed = parse_uint("seed", value(r, "seed"), U64::max());

  // What only the whole stream can tell (e.g. a LAST packet with --size 0, a payload above
  // the PMTU), in the library's words.
  if (auto e = check(s)) fail(*e);
  return c;
}

}  // namespace

RawUsage parse_raw_args(const std::vector<std::string>& args) {
  RawUsage u;
  cxxopts::Options options(kProg, kDescription);
  options.custom_help("(--pcap FILE | --dev PORT) [options]");
  add_options(options);
  options.set_width(100);
  u.help_text = options.help({"Output", "Ethernet and IP", "Base transport header",
                              "Extension header", "Payload",
                              "Marks and errors", "Help"}) +
                kMore;
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    const auto r = options.parse(static_cast<int>(argv.size()), argv.data());
    if (!r.unmatched().empty()) fail("unexpected argument '" + r.unmatched().front() + "' (options start with --)");
    if (r.count("help")) {
      u.help = true;
      return u;
    }
    if (r.count("list-opcodes")) {
      u.list_opcodes = true;
      return u;
    }
    u.cmd = build(r);
  } catch (const ParseFailure& f) {
    u.error = f.message;
  } catch (const std::exception& e) {
    u.error = e.what();
  }
  return u;
}

std::string opcode_list() {
  std::string out = "Opcode  Name                                 Extension headers     Payload\n";
  for (std::uint8_t op : all_opcodes()) {
    const OpcodeInfo& info = opcode_info(op);
    std::string headers;
    for (std::size_t h = 0; h < kExtHeaderCount; ++h)
      if (info.has(static_cast<ExtHeader>(h))) headers += (headers.empty() ? "" : "+") + to_string(static_cast<ExtHeader>(h));
    const char* payload = "";
    switch (info.payload) {
      case PayloadRule::None: payload = "none"; break;
      case PayloadRule::ExactPmtu: payload = "PMTU"; break;
      case PayloadRule::OneToPmtu: payload = "1..PMTU (--size)"; break;
      case PayloadRule::ZeroToPmtu: payload = "0..PMTU (--size)"; break;
      case PayloadRule::Exactly8: payload = "8"; break;
    }
    char line[160];
    std::snprintf(line, sizeof line, "0x%02x    %-36s %-21s %s\n", op, info.name, headers.empty() ? "-" : headers.c_str(),
                  payload);
    out += line;
  }
  return out + "Names are case-insensitive and '-' may stand for '_' (rc-send-only).\n";
}

}  // namespace roce::gen
