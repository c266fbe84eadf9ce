// roce-inspect as a user runs it: the built binary on the demo fixture, on pcapng and Linux
// cooked versions of it made at test time, on a real capture, on broken files and bad flags.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "apps/capture/capture_writer.hpp"
#include "apps/demo_pcap/demo_exchange.hpp"
#include "protocol/builder.hpp"
#include "tests/support/captures_dir.hpp"
#include "tests/support/json.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::inspect {
namespace {

namespace fs = std::filesystem;
using test::CommandResult;
using test::Json;

#ifndef ROCE_INSPECT_BIN
#define ROCE_INSPECT_BIN ""
#endif
#ifndef ROCE_EDITCAP
#define ROCE_EDITCAP ""
#endif

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

const std::string& inspect_bin() {
  static const std::string bin = env_or("ROCE_INSPECT_BIN", ROCE_INSPECT_BIN);
  return bin;
}

std::string fixture() { return (fs::path(ROCE_SOURCE_ROOT) / "pcap" / "demo_write_read.pcap").string(); }

CommandResult inspect(const std::vector<std::string>& args) { return test::run_command(inspect_bin(), args); }

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<Json> json_lines(const std::string& s) {
  std::vector<Json> out;
  for (const auto& l : lines(s)) {
    try {
      out.push_back(test::parse_json(l));
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what() << " in line: " << l;
    }
  }
  return out;
}

// The error contract: exactly one line on stderr, naming the program.
void expect_one_line_error(const CommandResult& r) {
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("roce-inspect: ", 0), 0u) << r.err;
  EXPECT_EQ(r.signal, 0);
}

// Link-layer lengths differ between the Ethernet and cooked versions of the same frame.
// (<regex> is avoided: GCC 12 sanitizer builds warn inside it.)
std::string without_lengths(std::string json_line) {
  const auto from = json_line.find("\"caplen\":");
  const auto len = json_line.find("\"len\":", from);
  const auto to = json_line.find(',', len);
  if (from == std::string::npos || len == std::string::npos || to == std::string::npos) return json_line;
  return json_line.erase(from, to + 1 - from);
}

class InspectCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(inspect_bin().empty()) << "ROCE_INSPECT_BIN not set";
    ASSERT_TRUE(fs::exists(inspect_bin())) << inspect_bin();
  }
  test::TempDir dir_;
};

TEST_F(InspectCli, TablePrintsAHeaderAndOneLinePerFrame) {
  const auto r = inspect({fixture()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto l = lines(r.out);
  ASSERT_EQ(l.size(), 12u) << r.out;
  EXPECT_NE(l[0].find("Verdict"), std::string::npos);
  EXPECT_NE(l[0].find("ICRC"), std::string::npos);
  for (std::size_t i = 1; i < l.size(); ++i) {
    EXPECT_EQ(l[i].find(std::to_string(i) + "  roce  "), l[i].find_first_not_of(' ')) << l[i];
    EXPECT_NE(l[i].find("  ok  "), std::string::npos) << l[i];
  }
  EXPECT_NE(l[6].find("CNP"), std::string::npos);
}

TEST_F(InspectCli, JsonLinesCarryEveryFrameOfTheDemo) {
  const auto r = inspect({fixture(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto js = json_lines(r.out);
  ASSERT_EQ(js.size(), 11u);
  for (std::size_t i = 0; i < js.size(); ++i) {
    EXPECT_EQ(js[i]["frame"].u64(), i + 1);
    EXPECT_EQ(js[i]["verdict"].str(), "roce");
    EXPECT_EQ(js[i]["reason"].str(), "ok");
    EXPECT_EQ(js[i]["icrc"].str(), "ok");
  }
  EXPECT_EQ(js[0]["reth"]["dma_length"].u64(), 2500u);
  EXPECT_EQ(js[3]["aeth"]["msn"].u64(), 1u);
  EXPECT_EQ(js[4]["ecn"].str(), "ce");
  EXPECT_EQ(js[4]["payload_length"].u64(), 18u);
  EXPECT_EQ(js[5]["opcode_name"].str(), "CNP");
  EXPECT_TRUE(js[5]["becn"].boolean());
  EXPECT_EQ(js[5]["dest_qp"].u64(), 0x11u);
  EXPECT_EQ(js[10]["aeth"]["msn"].u64(), 3u);
}

TEST_F(InspectCli, SummaryCountsPerOpcodeAndVerdictInJsonAndText) {
  const auto r = inspect({"--summary", "--json", fixture()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto js = json_lines(r.out);
  ASSERT_EQ(js.size(), 1u);
  const Json& s = js[0];
  EXPECT_EQ(s["frames"].u64(), 11u);
  EXPECT_TRUE(s["complete"].boolean());
  EXPECT_EQ(s["verdicts"]["roce"].u64(), 11u);
  EXPECT_EQ(s["icrc"]["ok"].u64(), 11u);
  std::map<std::string, std::uint64_t> ops;
  for (const auto& o : s["opcodes"].array()) ops[o["name"].str()] = o["count"].u64();
  const std::map<std::string, std::uint64_t> want{
      {"RC_RDMA_WRITE_FIRST", 1}, {"RC_RDMA_WRITE_MIDDLE", 1},         {"RC_RDMA_WRITE_LAST", 1},
      {"RC_ACKNOWLEDGE", 2},      {"RC_RDMA_WRITE_ONLY", 1},           {"CNP", 1},
      {"RC_RDMA_READ_REQUEST", 1}, {"RC_RDMA_READ_RESPONSE_FIRST", 1}, {"RC_RDMA_READ_RESPONSE_MIDDLE", 1},
      {"RC_RDMA_READ_RESPONSE_LAST", 1}};
  EXPECT_EQ(ops, want);

  const auto text = inspect({fixture(), "--summary"});
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("frames: 11\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("0x11 RC_ACKNOWLEDGE"), std::string::npos) << text.out;
}

TEST_F(InspectCli, EveryCrcBackendGivesTheSameOutput) {
  const auto isal = inspect({fixture(), "--json"});
  for (const char* crc : {"zlib", "portable"}) {
    const auto other = inspect({fixture(), "--json", "--crc", crc});
    EXPECT_EQ(other.exit_code, 0);
    EXPECT_EQ(other.out, isal.out) << crc;
  }
}

TEST_F(InspectCli, PmtuOptionRejectsPacketsLargerThanThePathMtu) {
  const auto r = inspect({fixture(), "--json", "--pmtu", "256"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto js = json_lines(r.out);
  ASSERT_EQ(js.size(), 11u);
  EXPECT_EQ(js[0]["verdict"].str(), "malformed");
  EXPECT_EQ(js[0]["reason"].str(), "payload-above-pmtu");
  EXPECT_EQ(js[0]["opcode_name"].str(), "RC_RDMA_WRITE_FIRST");  // the BTH still shows
  EXPECT_EQ(js[3]["verdict"].str(), "roce");                     // the ACK has no payload
}

TEST_F(InspectCli, PcapngGivesTheSameFramesAsPcap) {
  const std::string editcap = env_or("ROCE_EDITCAP", ROCE_EDITCAP);
  if (editcap.empty() || !fs::exists(editcap)) GTEST_SKIP() << "editcap (package wireshark-common) not found";
  const std::string ng = (dir_ / "demo.pcapng").string();
  const auto conv = test::run_command(editcap, {"-F", "pcapng", fixture(), ng});
  ASSERT_EQ(conv.exit_code, 0) << conv.err;
  const auto pcap = inspect({fixture(), "--json"});
  const auto pcapng = inspect({ng, "--json"});
  ASSERT_EQ(pcapng.exit_code, 0) << pcapng.err;
  EXPECT_EQ(pcapng.out, pcap.out);
}

// The demo frames without their Ethernet header behind a Linux cooked (or no) link header,
// followed by other traffic: ARP, RoCEv1, UDP to port 53, TCP.
void write_cooked(const std::string& path, capture::LinkType link) {
  std::vector<std::pair<std::uint16_t, std::vector<std::byte>>> frames;  // EtherType, IP datagram
  for (const auto& f : demo::demo_exchange()) frames.emplace_back(proto::kEtherTypeIpv4, std::vector(f.bytes.begin() + 14, f.bytes.end()));
  proto::FrameSpec dns;
  dns.with_ethernet = false;
  dns.udp_dst_port = 53;
  dns.bth.opcode = proto::raw(proto::Opcode::RcSendOnly);
  std::vector<std::byte> udp(proto::layout_frame(dns, 8).length);
  ASSERT_TRUE(proto::build_frame(dns, std::vector<std::byte>(8), udp, proto::CrcBackend::Isal).ok());
  auto tcp = udp;
  tcp[9] = std::byte{6};
  if (link != capture::LinkType::RawIp) {
    frames.emplace_back(proto::kEtherTypeArp, std::vector<std::byte>(28));
    frames.emplace_back(proto::kEtherTypeRoceV1, std::vector<std::byte>(60));
  }
  frames.emplace_back(proto::kEtherTypeIpv4, udp);
  frames.emplace_back(proto::kEtherTypeIpv4, tcp);

  capture::CaptureWriter w;
  ASSERT_TRUE(w.open(path, link)) << w.error();
  std::uint32_t usec = 0;
  for (const auto& [type, ip] : frames) {
    std::vector<std::byte> rec;
    if (link == capture::LinkType::LinuxSll) {
      capture::SllHeader h{};
      h.arphrd_type.set(1);
      h.addr_length.set(6);
      h.protocol.set(type);
      rec.resize(sizeof h);
      std::memcpy(rec.data(), &h, sizeof h);
    } else if (link == capture::LinkType::LinuxSll2) {
      capture::Sll2Header h{};
      h.protocol.set(type);
      h.arphrd_type.set(1);
      h.addr_length = 6;
      rec.resize(sizeof h);
      std::memcpy(rec.data(), &h, sizeof h);
    }
    rec.insert(rec.end(), ip.begin(), ip.end());
    ASSERT_TRUE(w.write(demo::kDemoStartSec, usec += 10, rec));
  }
  ASSERT_TRUE(w.close()) << w.error();
}

TEST_F(InspectCli, CookedAndRawIpCapturesDecodeLikeEthernet) {
  const auto eth = lines(inspect({fixture(), "--json"}).out);
  ASSERT_EQ(eth.size(), 11u);
  for (const auto link : {capture::LinkType::LinuxSll, capture::LinkType::LinuxSll2, capture::LinkType::RawIp}) {
    SCOPED_TRACE(capture::to_string(link));
    const std::string path = (dir_ / (capture::to_string(link) + ".pcap")).string();
    write_cooked(path, link);
    const auto r = inspect({path, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto l = lines(r.out);
    const auto js = json_lines(r.out);
    const bool cooked = link != capture::LinkType::RawIp;
    ASSERT_EQ(js.size(), cooked ? 15u : 13u);
    for (std::size_t i = 0; i < eth.size(); ++i) EXPECT_EQ(without_lengths(l[i]), without_lengths(eth[i]));
    std::size_t i = eth.size();
    if (cooked) {
      EXPECT_EQ(js[i]["verdict"].str(), "not-roce");
      EXPECT_EQ(js[i++]["reason"].str(), "not-ip");
      EXPECT_EQ(js[i++]["verdict"].str(), "rocev1");
    }
    EXPECT_EQ(js[i]["verdict"].str(), "not-roce");
    EXPECT_EQ(js[i++]["reason"].str(), "not-udp-4791");
    EXPECT_EQ(js[i]["verdict"].str(), "not-roce");
    EXPECT_EQ(js[i++]["reason"].str(), "not-udp");

    const auto s = json_lines(inspect({path, "--json", "--summary"}).out);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0]["verdicts"]["roce"].u64(), 11u);
    EXPECT_EQ(s[0]["verdicts"]["not-roce"].u64(), cooked ? 3u : 2u);
    EXPECT_EQ(s[0]["verdicts"]["rocev1"].u64(), cooked ? 1u : 0u);
  }
}

TEST_F(InspectCli, SnapTruncatedRecordsShowHeadersWithIcrcNotCheckable) {
  const std::string path = (dir_ / "snap80.pcap").string();
  capture::CaptureWriter w;
  ASSERT_TRUE(w.open(path, capture::LinkType::Ethernet, 80)) << w.error();
  for (const auto& f : demo::demo_exchange()) ASSERT_TRUE(w.write(demo::kDemoStartSec, 0, f.bytes));
  ASSERT_TRUE(w.close());
  const auto r = inspect({path, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto js = json_lines(r.out);
  ASSERT_EQ(js.size(), 11u);
  for (const auto& j : js) {
    SCOPED_TRACE(j["frame"].u64());
    EXPECT_EQ(j["verdict"].str(), "roce");
    EXPECT_EQ(j["icrc"].str(), j["len"].u64() > 80 ? "not-checkable" : "ok");
  }
  EXPECT_EQ(js[0]["payload_length"].u64(), 1024u);  // from the headers, not from the 80 bytes captured
  EXPECT_EQ(js[0]["reth"]["dma_length"].u64(), 2500u);
}

TEST_F(InspectCli, FileCutMidRecordPrintsTheFramesBeforeItAndFails) {
  const auto whole = test::read_file(fixture());
  // Header, five complete records, then the 16-byte header and 30 bytes of the sixth.
  std::size_t cut = 24;
  const auto frames = demo::demo_exchange();
  for (std::size_t i = 0; i < 5; ++i) cut += 16 + frames[i].bytes.size();
  cut += 16 + 30;
  const auto path = dir_ / "cut.pcap";
  test::write_file(path, whole.data(), cut);

  const auto r = inspect({path.string(), "--json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(json_lines(r.out).size(), 5u);
  expect_one_line_error(r);
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("after 5 complete frames"), std::string::npos) << r.err;

  const auto s = inspect({path.string(), "--json", "--summary"});
  EXPECT_EQ(s.exit_code, 1);
  const auto js = json_lines(s.out);
  ASSERT_EQ(js.size(), 1u);
  EXPECT_EQ(js[0]["frames"].u64(), 5u);
  EXPECT_FALSE(js[0]["complete"].boolean());
  expect_one_line_error(s);

  const auto table = inspect({path.string()});
  EXPECT_EQ(table.exit_code, 1);
  EXPECT_EQ(lines(table.out).size(), 6u);  // header + 5 frames
}

TEST_F(InspectCli, MissingEmptyAndNonCaptureFilesFailWithOneLine) {
  const auto empty = dir_ / "empty.pcap";
  test::write_file(empty, "", 0);
  const auto text = dir_ / "notes.pcap";
  test::write_file(text, "hello\n", 6);
  for (const auto& path : {(dir_ / "missing.pcap").string(), empty.string(), text.string()}) {
    SCOPED_TRACE(path);
    for (const auto& mode : std::vector<std::vector<std::string>>{{}, {"--json"}, {"--summary"}}) {
      std::vector<std::string> args{path};
      args.insert(args.end(), mode.begin(), mode.end());
      const auto r = inspect(args);
      EXPECT_EQ(r.exit_code, 2);
      EXPECT_EQ(r.out, "");
      expect_one_line_error(r);
      EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
    }
  }
}

TEST_F(InspectCli, UnsupportedLinkTypeFailsWithOneLine) {
  // A pcap header for link type 105 (IEEE 802.11) and no records.
  const char hdr[24] = {'\xd4', '\xc3', '\xb2', '\xa1', 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, '\xff', '\xff', 0, 0, 105, 0, 0, 0};
  const auto path = dir_ / "wifi.pcap";
  test::write_file(path, hdr, sizeof hdr);
  const auto r = inspect({path.string()});
  EXPECT_EQ(r.exit_code, 2);
  expect_one_line_error(r);
  EXPECT_NE(r.err.find("not supported"), std::string::npos) << r.err;
}

TEST_F(InspectCli, BadCommandLinesExitTwoWithOneLine) {
  const std::vector<std::vector<std::string>> bad{
      {},
      {fixture(), "--pmtu", "1000"},
      {fixture(), "--pmtu", "abc"},
      {fixture(), "--pmtu", "-1"},
      {fixture(), "--pmtu"},
      {fixture(), "--crc", "md5"},
      {fixture(), "--bogus"},
      {fixture(), fixture()},
  };
  for (const auto& args : bad) {
    SCOPED_TRACE(::testing::PrintToString(args));
    const auto r = inspect(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    expect_one_line_error(r);
  }
}

TEST_F(InspectCli, HelpExplainsUsageOptionsVerdictsAndExitStatus) {
  const auto r = inspect({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");
  for (const char* s : {"Usage", "FILE.pcap", "--json", "--summary", "--pmtu", "--crc", "malformed", "not-roce",
                        "rocev1", "Exit status", "not-checkable"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

TEST_F(InspectCli, RealMixedCaptureSeparatesRoceV1FromRoceV2) {
  std::string why;
  const auto dir = test::find_captures_dir(why);
  if (!dir) GTEST_SKIP() << why;
  const auto r = inspect({(*dir / "connectx_mixed_rocev1_v2.pcap").string(), "--summary", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto js = json_lines(r.out);
  ASSERT_EQ(js.size(), 1u);
  EXPECT_EQ(js[0]["frames"].u64(), 624u);
  EXPECT_EQ(js[0]["verdicts"]["roce"].u64(), 301u);
  EXPECT_EQ(js[0]["verdicts"]["rocev1"].u64(), 323u);
  EXPECT_EQ(js[0]["icrc"]["ok"].u64(), 301u);
  EXPECT_EQ(js[0]["icrc"]["bad"].u64(), 0u);
}

}  // namespace
}  // namespace roce::inspect
