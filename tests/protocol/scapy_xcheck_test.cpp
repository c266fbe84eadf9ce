// scapy -> our parser. tests/protocol/scapy_gen.py (run under Debian's /usr/bin/python3, which
// has scapy 2.5.0) writes seeded random frames of every opcode to a pcap in the build dir, with
// a CSV of the fields it put in them and the ICRC scapy (IPv4) or the script (IPv6) computed.
// This checks that our parser accepts each frame and decodes exactly those fields, and that our
// ICRC, with every CRC backend, equals theirs. Exit status 77 (meson: SKIP) when the
// interpreter or scapy is missing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "protocol/parser.hpp"
#include "tests/support/csv_sidecar.hpp"
#include "tests/support/hex.hpp"
#include "tests/support/capture_file.hpp"
#include "tests/support/random_frames.hpp"

namespace roce::proto {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// What the generator wrote; filled by main() before the tests run.
struct Generated {
  std::string seed;
  test::CaptureContents pcap;
  std::vector<test::CsvRow> rows;
};
Generated g_generated;

constexpr CrcBackend kBackends[] = {CrcBackend::Portable, CrcBackend::Zlib, CrcBackend::Isal};

class ScapyCrossCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(g_generated.pcap.error.empty()) << g_generated.pcap.error;
    ASSERT_EQ(g_generated.pcap.link, capture::LinkType::Ethernet);
    ASSERT_EQ(g_generated.pcap.records.size(), g_generated.rows.size()) << "pcap and CSV sidecar disagree";
    ASSERT_FALSE(g_generated.rows.empty());
  }
  static std::string where(std::size_t i) {
    return "frame " + std::to_string(i + 1) + " of the pcap, seed " + g_generated.seed + " (ROCE_XCHECK_SEED)";
  }
};

TEST_F(ScapyCrossCheck, CoversEveryOpcodeOfOurTableWithEveryPadCountOnBothIpVersions) {
  std::set<unsigned> opcodes;
  std::set<std::pair<unsigned, unsigned>> version_pad;
  for (const auto& r : g_generated.rows) {
    opcodes.insert(static_cast<unsigned>(*r.number("opcode")));
    version_pad.insert({static_cast<unsigned>(*r.number("ip_version")), static_cast<unsigned>(*r.number("pad_count"))});
  }
  std::set<unsigned> ours;
  for (auto op : test::valid_opcodes()) ours.insert(op);
  EXPECT_EQ(opcodes, ours) << "scapy_gen.py's opcode list and protocol/opcode.hpp differ";
  for (unsigned v : {4u, 6u})
    for (unsigned pad = 0; pad < 4; ++pad) EXPECT_TRUE(version_pad.count({v, pad})) << "IPv" << v << " PadCnt " << pad;
}

TEST_F(ScapyCrossCheck, OurParserAcceptsEveryFrameWithTheFieldsScapyBuilt) {
  for (std::size_t i = 0; i < g_generated.rows.size(); ++i) {
    SCOPED_TRACE(where(i));
    const auto& r = g_generated.rows[i];
    const auto& frame = g_generated.pcap.records[i].data;
    Packet p;
    ASSERT_EQ(parse_frame(frame, {}, p), ParseError::None);
    auto expect_field = [&r](const char* column, std::uint64_t got) {
      const auto want = r.number(column);
      ASSERT_TRUE(want.has_value()) << column << " missing from the sidecar";
      EXPECT_EQ(got, *want) << column;
    };
    expect_field("frame_length", frame.size());
    expect_field("ip_version", static_cast<unsigned>(p.ip_version));
    expect_field("vlan_count", p.eth.vlan_count);
    expect_field("opcode", p.opcode());
    expect_field("dest_qp", p.dest_qp());
    expect_field("psn", p.psn());
    expect_field("pad_count", p.bth.pad_count());
    expect_field("se", p.bth.se());
    expect_field("migreq", p.bth.mig_req());
    expect_field("ackreq", p.bth.ack_requested());
    expect_field("pkey", p.bth.pkey.get());
    expect_field("fecn", p.bth.fecn());
    expect_field("becn", p.bth.becn());
    expect_field("tos", p.ip_version == IpVersion::V4 ? p.ipv4.tos : p.ipv6.traffic_class);
    expect_field("ecn", static_cast<unsigned>(p.ecn()));
    expect_field("ttl", p.ip_version == IpVersion::V4 ? p.ipv4.ttl : p.ipv6.hop_limit);
    expect_field("udp_sport", p.udp_src_port);
    expect_field("udp_checksum", p.udp_checksum);
    expect_field("payload_length", p.payload_length);
    expect_field("payload_crc32", crc32(CrcBackend::Zlib, 0, p.payload));

    // Extension headers: the raw bytes, then every field scapy_gen.py packed, through our accessors.
    const auto* bth_end = frame.data() + p.bth_offset + sizeof(Bth);
    EXPECT_EQ(test::to_hex(bth_end, p.info->ext_bytes), r.text("ext_hex"));
    const auto& e = p.ext;
    const std::pair<const char*, std::uint64_t> ext_fields[] = {
        {"reth_va", e.reth.va.get()},
        {"reth_rkey", e.reth.rkey.get()},
        {"reth_dmalen", e.reth.dma_length.get()},
        {"aeth_syndrome", e.aeth.syndrome},
        {"aeth_msn", e.aeth.msn.get()},
        {"deth_qkey", e.deth.qkey.get()},
        {"deth_srcqp", e.deth.source_qp()},
        {"immdt", Be32{e.imm.bytes}.get()},
        {"ieth_rkey", e.ieth.rkey.get()},
        {"atomic_va", e.atomic.va.get()},
        {"atomic_rkey", e.atomic.rkey.get()},
        {"atomic_swap_add", e.atomic.swap_add.get()},
        {"atomic_compare", e.atomic.compare.get()},
        {"atomicack_orig", e.atomic_ack.original_data.get()},
        {"feth", e.feth.bits.get()},
    };
    int present = 0;
    for (const auto& [column, got] : ext_fields) {
      if (!r.number(column)) continue;
      ++present;
      EXPECT_EQ(got, *r.number(column)) << column;
    }
    // A field the generator filled must belong to a header our table says the opcode carries.
    const int expected_fields = (p.info->has(ExtHeader::Reth) ? 3 : 0) + (p.info->has(ExtHeader::Aeth) ? 2 : 0) +
                                (p.info->has(ExtHeader::Deth) ? 2 : 0) + (p.info->has(ExtHeader::ImmDt) ? 1 : 0) +
                                (p.info->has(ExtHeader::Ieth) ? 1 : 0) + (p.info->has(ExtHeader::AtomicEth) ? 4 : 0) +
                                (p.info->has(ExtHeader::AtomicAckEth) ? 1 : 0) + (p.info->has(ExtHeader::Feth) ? 1 : 0);
    EXPECT_EQ(present, expected_fields) << opcode_name(p.opcode());
  }
}

TEST_F(ScapyCrossCheck, OurIcrcEqualsScapysOnIpv4AndTheSpecScriptsOnIpv6) {
  std::size_t from_scapy = 0;
  for (std::size_t i = 0; i < g_generated.rows.size(); ++i) {
    SCOPED_TRACE(where(i));
    const auto& r = g_generated.rows[i];
    const auto& frame = g_generated.pcap.records[i].data;
    const std::string& source = r.text("icrc_source");
    ASSERT_EQ(source, *r.number("ip_version") == 4 ? "scapy" : "script");
    from_scapy += source == "scapy";
    Packet p;
    ASSERT_EQ(parse_frame(frame, {}, p), ParseError::None);
    const auto want = static_cast<std::uint32_t>(*r.number("icrc"));
    EXPECT_EQ(p.icrc, want) << "our reading of the trailer";
    const auto datagram = std::span{frame}.subspan(p.l3_offset, p.datagram_end - kIcrcBytes - p.l3_offset);
    for (auto crc : kBackends) EXPECT_EQ(compute_icrc(crc, p.ip_version, datagram), want) << to_string(crc);
    EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
  }
  EXPECT_GT(from_scapy, 100u);
}

}  // namespace
}  // namespace roce::proto

namespace {

// Runs the generator; returns 0, 77 (skip, reason printed) or 1.
int generate(roce::proto::Generated& out) {
  using roce::proto::env_or;
  const std::string python = env_or("ROCE_XCHECK_PYTHON", "/usr/bin/python3");
  const std::string script = env_or("ROCE_XCHECK_SCAPY_GEN", "");
  const std::string dir = env_or("ROCE_XCHECK_OUT_DIR", ".");
  out.seed = env_or("ROCE_XCHECK_SEED", "4791");
  if (script.empty()) {
    std::fprintf(stderr, "ROCE_XCHECK_SCAPY_GEN is not set (meson test sets it)\n");
    return 1;
  }
  if (access(python.c_str(), X_OK) != 0) {
    std::printf("SKIP: %s not found; scapy cross-check needs Debian's python3 with python3-scapy\n", python.c_str());
    return 77;
  }
  const std::string pcap = dir + "/scapy_xcheck.pcap", csv = dir + "/scapy_xcheck.csv";
  const std::string cmd = "'" + python + "' '" + script + "' --seed " + out.seed + " --pcap '" + pcap + "' --csv '" + csv + "'";
  std::printf("running: %s\n", cmd.c_str());
  std::fflush(stdout);
  const int rc = std::system(cmd.c_str());
  if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) {
    std::printf("SKIP: %s cannot import scapy (install python3-scapy)\n", python.c_str());
    return 77;
  }
  if (rc != 0) {
    std::fprintf(stderr, "scapy_gen.py failed (status %d)\n", rc);
    return 1;
  }
  out.pcap = roce::test::read_capture(pcap);
  out.rows = roce::test::read_csv(csv);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (const int rc = generate(roce::proto::g_generated); rc != 0) return rc;
  return RUN_ALL_TESTS();
}
