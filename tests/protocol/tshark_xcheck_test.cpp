// Our builder -> tshark. Seeded random frames of every opcode in our table (IPv4/IPv6, 0-2 VLAN
// tags) go into a pcap in the build dir; tshark (Wireshark's RoCEv2 dissector, UDP 4791 by
// default) decodes it, and this checks that no frame is malformed or carries an expert error and
// that the fields tshark reads are the ones we wrote. Exit status 77 (meson: SKIP) when tshark
// is not installed.
//
// tshark 4.0 knows neither FLUSH (0x1C), ATOMIC_WRITE (0x1D) nor the CNP (0x81): it decodes
// their BTH and shows the rest as unknown data, so for those only the BTH is compared.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <set>
#include <sstream>
#include <string>

#include "protocol/parser.hpp"
#include "protocol/payload_rule.hpp"
#include "tests/support/hex.hpp"
#include "tests/support/capture_file.hpp"
#include "tests/support/random_frames.hpp"

namespace roce::proto {
namespace {

// The fields asked of tshark, in column order (names from `tshark -G fields`, tshark 4.0).
const std::vector<std::string> kFields = {
    "frame.number",           "_ws.malformed",          "_ws.expert.severity",       "_ws.expert.message",
    "infiniband.bth.opcode",  "infiniband.bth.se",      "infiniband.bth.m",          "infiniband.bth.padcnt",
    "infiniband.bth.tver",    "infiniband.bth.p_key",   "infiniband.bth.destqp",     "infiniband.bth.a",
    "infiniband.bth.psn",     "infiniband.reth.va",     "infiniband.reth.r_key",     "infiniband.reth.dmalen",
    "infiniband.aeth.syndrome", "infiniband.aeth.msn",  "infiniband.deth.q_key",     "infiniband.deth.srcqp",
    "infiniband.immdt",       "infiniband.ieth",        "infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt",
    "infiniband.atomicacketh.origremdt", "infiniband.invariant.crc", "data.data", "udp.srcport",
};

constexpr std::uint64_t kExpertSeverityError = 0x00800000;  // PI_ERROR in epan/proto.h

using Row = std::map<std::string, std::string>;

struct Run {
  std::string seed;
  std::vector<test::RandomFrame> frames;  // the frames we built, in pcap order
  std::vector<std::vector<std::byte>> bytes;
  std::vector<Row> rows;                  // tshark's view, one per pcap record (control frame last)
};
Run g_run;

// tshark prints every occurrence of a field, joined by kAggregator (expert messages contain
// commas, so not ','). The first occurrence is the one we want (ImmDt and IETH appear twice,
// as the header and as its value).
constexpr char kAggregator = '\x1e';

std::vector<std::string> occurrences(const Row& r, const std::string& field) {
  std::vector<std::string> out;
  const auto it = r.find(field);
  if (it == r.end() || it->second.empty()) return out;
  std::istringstream in(it->second);
  for (std::string s; std::getline(in, s, kAggregator);) out.push_back(s);
  return out;
}

std::string first(const Row& r, const std::string& field) {
  const auto all = occurrences(r, field);
  return all.empty() ? std::string{} : all.front();
}

std::vector<std::pair<std::uint64_t, std::string>> expert_infos(const Row& r) {
  const auto severities = occurrences(r, "_ws.expert.severity");
  const auto messages = occurrences(r, "_ws.expert.message");
  std::vector<std::pair<std::uint64_t, std::string>> out;
  for (std::size_t i = 0; i < severities.size(); ++i)
    out.emplace_back(std::stoull(severities[i], nullptr, 0), i < messages.size() ? messages[i] : "");
  return out;
}

std::uint64_t number(const Row& r, const std::string& field) {
  const std::string s = first(r, field);
  if (s.empty()) throw std::runtime_error("tshark printed no " + field);
  if (s == "True") return 1;
  if (s == "False") return 0;
  return std::stoull(s, nullptr, 0);
}

bool opcode_known_to_tshark_4_0(std::uint8_t op) {
  return op != raw(Opcode::RcFlush) && op != raw(Opcode::RcAtomicWrite) && op != raw(Opcode::Cnp);
}

class TsharkCrossCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(g_run.rows.size(), g_run.frames.size() + 1) << "tshark did not print one line per frame";
  }
  static std::string where(std::size_t i) {
    return "frame " + std::to_string(i + 1) + " (" + opcode_name(g_run.frames[i].spec.bth.opcode) + "), seed " +
           g_run.seed + " (ROCE_XCHECK_SEED)";
  }
};

TEST_F(TsharkCrossCheck, EveryFrameWeBuildDecodesWithoutMalformedOrExpertErrors) {
  std::set<std::uint8_t> opcodes;
  std::size_t ipv6_zero_checksum = 0;
  for (std::size_t i = 0; i < g_run.frames.size(); ++i) {
    SCOPED_TRACE(where(i));
    const Row& r = g_run.rows[i];
    const FrameSpec& s = g_run.frames[i].spec;
    EXPECT_EQ(r.at("_ws.malformed"), "");
    for (const auto& [severity, message] : expert_infos(r)) {
      if (severity < kExpertSeverityError) continue;
      // RoCEv2 sends UDP checksum 0 over IPv6 too (rxe hard-codes it, every capture shows it;
      // rocev2-wire.md 1.1), which RFC 8200 forbids and tshark reports as an error.
      if (s.ip_version == IpVersion::V6 && s.udp_checksum == 0 && message == "Illegal checksum value (0)") {
        ++ipv6_zero_checksum;
        continue;
      }
      ADD_FAILURE() << "tshark expert error: " << message;
    }
    ASSERT_FALSE(first(r, "infiniband.bth.opcode").empty()) << "tshark did not decode the BTH";
    opcodes.insert(static_cast<std::uint8_t>(number(r, "infiniband.bth.opcode")));
  }
  EXPECT_EQ(opcodes.size(), test::valid_opcodes().size());
  EXPECT_GT(ipv6_zero_checksum, 0u) << "the IPv6 zero-checksum exemption above was never used";
}

// Proves the check above can fail: the last record is a frame cut inside the BTH.
TEST_F(TsharkCrossCheck, AFrameCutInsideTheBthIsFlaggedByTshark) {
  const Row& r = g_run.rows.back();
  bool error = !r.at("_ws.malformed").empty();
  for (const auto& [severity, message] : expert_infos(r)) error |= severity >= kExpertSeverityError;
  EXPECT_TRUE(error) << "tshark did not flag the cut frame; the malformed/expert checks would pass vacuously";
}

TEST_F(TsharkCrossCheck, BthFieldsEqualWhatWeBuilt) {
  for (std::size_t i = 0; i < g_run.frames.size(); ++i) {
    SCOPED_TRACE(where(i));
    const Row& r = g_run.rows[i];
    Packet p;
    ASSERT_EQ(parse_frame(g_run.bytes[i], {}, p), ParseError::None);
    const Bth& b = p.bth;
    EXPECT_EQ(number(r, "infiniband.bth.opcode"), b.opcode);
    EXPECT_EQ(number(r, "infiniband.bth.se"), b.se());
    EXPECT_EQ(number(r, "infiniband.bth.m"), b.mig_req());
    EXPECT_EQ(number(r, "infiniband.bth.padcnt"), b.pad_count());
    EXPECT_EQ(number(r, "infiniband.bth.tver"), 0u);
    EXPECT_EQ(number(r, "infiniband.bth.p_key"), b.pkey.get());
    EXPECT_EQ(number(r, "infiniband.bth.destqp"), b.dest_qp.get());
    EXPECT_EQ(number(r, "infiniband.bth.a"), b.ack_requested());
    EXPECT_EQ(number(r, "infiniband.bth.psn"), b.psn.get());
    EXPECT_EQ(number(r, "udp.srcport"), p.udp_src_port);
    // Built fields, not just parsed ones: the spec we gave the builder.
    EXPECT_EQ(b.dest_qp.get(), g_run.frames[i].spec.bth.dest_qp.get());
    EXPECT_EQ(b.psn.get(), g_run.frames[i].spec.bth.psn.get());
  }
}

TEST_F(TsharkCrossCheck, ExtensionHeaderPayloadAndIcrcPlacementEqualWhatWeBuilt) {
  std::size_t compared = 0;
  for (std::size_t i = 0; i < g_run.frames.size(); ++i) {
    SCOPED_TRACE(where(i));
    const Row& r = g_run.rows[i];
    const auto& f = g_run.frames[i];
    const OpcodeInfo& info = opcode_info(f.spec.bth.opcode);
    if (!opcode_known_to_tshark_4_0(f.spec.bth.opcode)) continue;
    ++compared;
    const ExtHeaders& e = f.spec.ext;
    if (info.has(ExtHeader::Reth)) {
      EXPECT_EQ(number(r, "infiniband.reth.va"), e.reth.va.get());
      EXPECT_EQ(number(r, "infiniband.reth.r_key"), e.reth.rkey.get());
      EXPECT_EQ(number(r, "infiniband.reth.dmalen"), e.reth.dma_length.get());
    }
    if (info.has(ExtHeader::AtomicEth)) {  // tshark shows the AtomicETH VA and R_Key with RETH's fields
      EXPECT_EQ(number(r, "infiniband.reth.va"), e.atomic.va.get());
      EXPECT_EQ(number(r, "infiniband.reth.r_key"), e.atomic.rkey.get());
      EXPECT_EQ(number(r, "infiniband.atomiceth.swapdt"), e.atomic.swap_add.get());
      EXPECT_EQ(number(r, "infiniband.atomiceth.cmpdt"), e.atomic.compare.get());
    }
    if (info.has(ExtHeader::Aeth)) {
      EXPECT_EQ(number(r, "infiniband.aeth.syndrome"), e.aeth.syndrome);
      EXPECT_EQ(number(r, "infiniband.aeth.msn"), e.aeth.msn.get());
    }
    if (info.has(ExtHeader::AtomicAckEth)) {
      EXPECT_EQ(number(r, "infiniband.atomicacketh.origremdt"), e.atomic_ack.original_data.get());
    }
    if (info.has(ExtHeader::Deth)) {
      EXPECT_EQ(number(r, "infiniband.deth.q_key"), e.deth.qkey.get());
      EXPECT_EQ(number(r, "infiniband.deth.srcqp"), e.deth.source_qp());
    }
    if (info.has(ExtHeader::ImmDt)) {
      EXPECT_EQ(first(r, "infiniband.immdt"), test::to_hex(e.imm.bytes));
    }
    if (info.has(ExtHeader::Ieth)) {
      EXPECT_EQ(first(r, "infiniband.ieth"), test::to_hex(e.ieth.rkey.bytes));
    }
    // Payloads no sub-dissector claims go to tshark's "data" protocol, pad bytes included.
    auto payload_and_pad = f.payload;
    payload_and_pad.resize(f.payload.size() + pad_for(static_cast<std::uint32_t>(f.payload.size())), std::byte{0});
    const std::string got = first(r, "data.data"), want = test::to_hex(payload_and_pad);
    EXPECT_TRUE(got == want) << "payload+pad differ: tshark shows " << got.size() / 2 << " bytes, we built "
                             << want.size() / 2;
    // tshark reads the trailer big-endian; we store it least-significant byte first.
    const auto& bytes = g_run.bytes[i];
    Be32 trailer;
    std::memcpy(&trailer, bytes.data() + bytes.size() - 4, 4);
    EXPECT_EQ(number(r, "infiniband.invariant.crc"), trailer.get());
  }
  EXPECT_GT(compared, 200u);
}

}  // namespace
}  // namespace roce::proto

namespace {

using roce::proto::g_run;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string find_tshark() {
  const std::string set = env_or("ROCE_XCHECK_TSHARK", "");
  if (!set.empty()) return access(set.c_str(), X_OK) == 0 ? set : "";
  std::istringstream path(env_or("PATH", "/usr/bin:/bin"));
  for (std::string dir; std::getline(path, dir, ':');)
    if (access((dir + "/tshark").c_str(), X_OK) == 0) return dir + "/tshark";
  return "";
}

void build_frames(std::uint64_t seed) {
  using namespace roce::proto;
  roce::test::Rng rng(seed);
  for (std::uint8_t op : roce::test::valid_opcodes()) {
    for (auto v : {IpVersion::V4, IpVersion::V6}) {
      for (std::uint8_t vlans = 0; vlans < 3; ++vlans) {
        roce::test::RandomFrameOptions o;
        o.ip_version = v;
        o.vlan_count = vlans;
        o.pad = static_cast<std::uint8_t>(rng() % 4);
        auto f = roce::test::random_frame(rng, op, o);
        // Unicast MACs (tshark warns on a group source); QP0/QP1 carry MADs, which tshark
        // would try to decode from our random payload; the CNP's reserved bytes are zero.
        // The source port is in the range RNICs use: tshark's UDP dissector tries the lower
        // port first, so a random port below 4791 could be decoded as, say, NTP.
        f.spec.udp_src_port = static_cast<std::uint16_t>(0xC000 | (rng() & 0x3FFF));
        f.spec.eth.src[0] &= 0xFE;
        f.spec.eth.dst[0] &= 0xFE;
        if (f.spec.bth.dest_qp.get() < 2) f.spec.bth.dest_qp.set(2);
        f.spec.ext.cnp = {};
        g_run.bytes.push_back(roce::test::build(f));
        g_run.frames.push_back(std::move(f));
      }
    }
  }
}

// A frame of ours cut short inside the BTH while its IP length still claims the whole packet.
std::vector<std::byte> cut_frame() {
  auto cut = g_run.bytes.front();
  cut.resize(14 + 20 + 8 + 6);
  return cut;
}

// Heuristic dissectors that could claim a random payload (as SMB Direct, NVMe-oF, ...) are not
// what this test is about, so their protocols are disabled. `-G heuristic-decodes` names the
// protocol, not the heuristic, so --disable-protocol it is; the "ethertype" one stays on, as
// disabling that protocol would stop Ethernet decoding (a fixed seed keeps the run repeatable).
std::string disable_payload_heuristics(const std::string& tshark) {
  std::string args;
  FILE* p = popen(("'" + tshark + "' -G heuristic-decodes 2>/dev/null").c_str(), "r");
  if (!p) return args;
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    std::istringstream in(line);
    std::string table, proto;
    if (std::getline(in, table, '\t') && std::getline(in, proto, '\t') && table == "infiniband.payload" &&
        proto != "ethertype")
      args += " --disable-protocol " + proto;
  }
  pclose(p);
  return args;
}

int run_tshark(const std::string& tshark, const std::string& pcap) {
  std::string cmd = "'" + tshark + "' -n -r '" + pcap + "' -T fields -E separator=/t -E occurrence=a -E 'aggregator=";
  cmd += roce::proto::kAggregator;
  cmd += "'";
  cmd += disable_payload_heuristics(tshark);
  for (const auto& f : roce::proto::kFields) cmd += " -e " + f;
  std::printf("running: %s\n", cmd.c_str());
  std::fflush(stdout);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return 1;
  std::string out;
  char buf[65536];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int rc = pclose(p);
  if (rc != 0) {
    std::fprintf(stderr, "tshark exited with status %d\n", rc);
    return 1;
  }
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    roce::proto::Row row;
    std::size_t start = 0;
    for (const auto& f : roce::proto::kFields) {
      const std::size_t end = line.find('\t', start);
      row[f] = line.substr(start, end == std::string::npos ? std::string::npos : end - start);
      start = end == std::string::npos ? line.size() : end + 1;
    }
    g_run.rows.push_back(std::move(row));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string tshark = find_tshark();
  if (tshark.empty()) {
    std::printf("SKIP: tshark not found (ROCE_XCHECK_TSHARK, else PATH; apt-get install tshark); builder -> tshark cross-check not run\n");
    return 77;
  }
  g_run.seed = env_or("ROCE_XCHECK_SEED", "4791");
  build_frames(std::stoull(g_run.seed, nullptr, 0));
  auto records = g_run.bytes;
  records.push_back(cut_frame());
  const std::string pcap = env_or("ROCE_XCHECK_OUT_DIR", ".") + "/tshark_xcheck.pcap";
  if (const std::string e = roce::test::write_capture(pcap, records); !e.empty()) {
    std::fprintf(stderr, "cannot write %s: %s\n", pcap.c_str(), e.c_str());
    return 1;
  }
  if (run_tshark(tshark, pcap) != 0) return 1;
  return RUN_ALL_TESTS();
}
