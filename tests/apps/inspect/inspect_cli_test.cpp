// roce-inspect as a user runs it: the built binary on the demo fixture, on pcapng and Linux
// cooked versions of it made at test time, on a real capture, on broken files and bad flags.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "capture/capture_writer.hpp"
#include "apps/demo_pcap/demo_exchange.hpp"
#include "protocol/builder.hpp"
#include "tests/support/captures_dir.hpp"
#include "tests/support/json.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vendor_frames.hpp"

namespace roce::inspect::inspect_cli_test {
namespace {

namespace fs = std::filesystem;
// Another file of this unity build opens roce::inspect::test; the helpers are roce::test's.
namespace test = ::roce::test;
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

// The same frame read from another file or link type differs in these keys only.
bool is_record_key(const std::string& k) {
  return k == "file" || k == "caplen" || k == "len" || k.rfind("time", 0) == 0 || k.rfind("eth.", 0) == 0;
}

// `a` and `b` hold the same keys with the same values, record keys aside.
void expect_same_frame(const std::string& a_line, const std::string& b_line) {
  const Json a = test::parse_json(a_line), b = test::parse_json(b_line);
  auto text = [](const Json& v) {
    if (v.is_string()) return "\"" + v.str() + "\"";
    if (v.is_bool()) return std::string(v.boolean() ? "true" : "false");
    return std::to_string(v.num());
  };
  std::map<std::string, std::string> ka, kb;
  for (const auto& [k, v] : a.object())
    if (!is_record_key(k)) ka[k] = text(v);
  for (const auto& [k, v] : b.object())
    if (!is_record_key(k)) kb[k] = text(v);
  EXPECT_EQ(ka, kb) << a_line << "\n" << b_line;
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
    const std::string no = std::to_string(i) + " ";
    EXPECT_EQ(l[i].find(no), l[i].find_first_not_of(' ')) << l[i];
    EXPECT_EQ(l[i].find("0.000"), l[i].find_first_not_of(' ', l[i].find(no) + no.size())) << l[i];
    EXPECT_NE(l[i].find("2023-11-14 22:13:20.000"), std::string::npos) << l[i];
    EXPECT_NE(l[i].find("  roce  "), std::string::npos) << l[i];
    EXPECT_NE(l[i].find("  ok  "), std::string::npos) << l[i];
  }
  EXPECT_NE(l[6].find("CNP"), std::string::npos);
  EXPECT_NE(l[1].find("10.0.0.1         10.0.0.2         57236"), std::string::npos) << l[1];
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
  EXPECT_EQ(js[0]["reth.len"].u64(), 2500u);
  EXPECT_EQ(js[3]["aeth.msn"].u64(), 1u);
  EXPECT_EQ(js[4]["ip.ecn"].str(), "ce");
  EXPECT_TRUE(js[4]["ce"].boolean());
  EXPECT_EQ(js[4]["payload.len"].u64(), 18u);
  EXPECT_EQ(js[5]["opcode.name"].str(), "CNP");
  EXPECT_TRUE(js[5]["becn"].boolean());
  EXPECT_EQ(js[5]["qpn"].u64(), 0x11u);
  EXPECT_EQ(js[10]["aeth.msn"].u64(), 3u);
  EXPECT_EQ(js[10]["time"].num(), 100e-6);
  EXPECT_EQ(js[10]["time.epoch"].str(), "1700000000.000100000");
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

TEST_F(InspectCli, MtuOptionRejectsPacketsLargerThanThePathMtu) {
  const auto r = inspect({fixture(), "--json", "--mtu", "256"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto js = json_lines(r.out);
  ASSERT_EQ(js.size(), 11u);
  EXPECT_EQ(js[0]["verdict"].str(), "malformed");
  EXPECT_EQ(js[0]["reason"].str(), "payload-above-pmtu");
  EXPECT_EQ(js[0]["opcode.name"].str(), "RC_RDMA_WRITE_FIRST");  // the BTH still shows
  EXPECT_EQ(js[3]["verdict"].str(), "roce");                     // the ACK has no payload
}

// The old spellings stay for scripts: --pmtu is --mtu (as -m), -s is --summary.
TEST_F(InspectCli, OldSpellingsPmtuAndDashSStillWork) {
  const auto mtu = inspect({fixture(), "--json", "--mtu", "256"});
  ASSERT_EQ(mtu.exit_code, 0) << mtu.err;
  for (const char* name : {"--pmtu", "-m"}) {
    const auto r = inspect({fixture(), "--json", name, "256"});
    ASSERT_EQ(r.exit_code, 0) << name << r.err;
    EXPECT_EQ(r.out, mtu.out) << name;
  }
  const auto summary = inspect({fixture(), "--summary"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  const auto s = inspect({fixture(), "-s"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(s.out, summary.out);
  const auto both = inspect({fixture(), "--mtu", "256", "--pmtu", "256"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--pmtu is the old name of --mtu"), std::string::npos) << both.err;
  const auto bad = inspect({fixture(), "--pmtu", "1000"});
  EXPECT_NE(bad.err.find("--pmtu: '1000' is not"), std::string::npos) << bad.err;
  const auto help = inspect({"--help"});
  EXPECT_EQ(help.out.find("--pmtu"), std::string::npos) << "old spellings stay out of the help";
}

TEST_F(InspectCli, PcapngGivesTheSameFramesAsPcap) {
  const std::string editcap = env_or("ROCE_EDITCAP", ROCE_EDITCAP);
  if (editcap.empty() || !fs::exists(editcap)) GTEST_SKIP() << "editcap (package wireshark-common) not found";
  const std::string ng = (dir_ / "demo.pcapng").string();
  const auto conv = test::run_command(editcap, {"-F", "pcapng", fixture(), ng});
  ASSERT_EQ(conv.exit_code, 0) << conv.err;
  const auto pcap = lines(inspect({fixture(), "--json"}).out);
  const auto pcapng = inspect({ng, "--json"});
  ASSERT_EQ(pcapng.exit_code, 0) << pcapng.err;
  const auto ngl = lines(pcapng.out);
  ASSERT_EQ(ngl.size(), pcap.size());
  for (std::size_t i = 0; i < ngl.size(); ++i) {
    expect_same_frame(ngl[i], pcap[i]);
    EXPECT_EQ(test::parse_json(ngl[i])["time.epoch"].str(), test::parse_json(pcap[i])["time.epoch"].str());
  }
}

// The demo frames without their Ethernet header behind a Linux cooked (or no) link header,
// followed by other traffic: ARP, a RoCEv1 SEND, UDP to port 53, TCP.
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
    roce::test::VendorFrameSpec v1;
    v1.opcode = proto::raw(proto::Opcode::RcSendOnly);
    v1.payload.assign(6, std::byte{9});
    const auto f = roce::test::rocev1_frame(v1);
    frames.emplace_back(proto::kEtherTypeRoceV1, std::vector(f.begin() + 14, f.end()));
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
    for (std::size_t i = 0; i < eth.size(); ++i) expect_same_frame(l[i], eth[i]);
    std::size_t i = eth.size();
    if (cooked) {
      EXPECT_EQ(js[i]["verdict"].str(), "not-roce");
      EXPECT_EQ(js[i++]["reason"].str(), "not-ip");
      EXPECT_EQ(js[i]["verdict"].str(), "rocev1");
      EXPECT_EQ(js[i]["icrc"].str(), "ok");
      EXPECT_EQ(js[i++]["payload.len"].u64(), 6u);
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
  EXPECT_EQ(js[0]["payload.len"].u64(), 1024u);  // from the headers
  EXPECT_EQ(js[0]["payload.captured"].u64(), 80u - 14 - 20 - 8 - 12 - 16);  // what the 80 bytes hold of it
  EXPECT_TRUE(js[0]["cut"].boolean());
  EXPECT_FALSE(js[3].has("cut"));  // the 62-byte ACK fits
  EXPECT_EQ(js[0]["reth.len"].u64(), 2500u);
  const auto table = lines(inspect({path}).out);
  EXPECT_NE(table[1].find("cut by the snap length: captured 80 of 1098 bytes"), std::string::npos) << table[1];
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
      {fixture(), "--mtu", "1000"},
      {fixture(), "--mtu", "abc"},
      {fixture(), "-m", "-1"},
      {fixture(), "--mtu"},
      {fixture(), "--pmtu"},
      {fixture(), "--crc", "md5"},
      {fixture(), "--bogus"},
      {fixture(), "-Y", "qpm == 1"},
      {fixture(), "-Y", "psn >"},
      {fixture(), "-c", "0"},
      {fixture(), "-c", "x"},
      {fixture(), "-T", "pdml"},
      {fixture(), "-T", "fields"},
      {fixture(), "-T", "fields", "-e", "nope"},
      {fixture(), "-E", "quote=d"},
      {fixture(), "-t", "zz"},
      {fixture(), "--plot", "psn.png"},
      {fixture(), fixture(), "--plot", "psn.svg"},
      {fixture(), "--threads", "0"},
      {fixture(), "--interval", "-1"},
      {fixture(), "--summary", "-T", "json"},
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
  for (const char* s : {"Usage", "FILE.pcap", "--json", "--summary", "--mtu", "--crc", "malformed", "not-roce",
                        "rocev1", "Exit status", "not-checkable", "-Y", "-T", "Fields", "infiniband.bth.destqp",
                        "hex64", "retransmission", "DC", "--plot", "Karn"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

TEST_F(InspectCli, FilterCountAndFieldsLikeTshark) {
  const auto r = inspect({fixture(), "-Y", "opcode == RC_ACKNOWLEDGE or cnp", "-T", "fields", "-e", "frame", "-e", "qpn",
                          "-e", "infiniband.bth.psn", "-e", "aeth.meaning", "-E", "separator=,", "-E", "header=y"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "frame,qpn,infiniband.bth.psn,aeth.meaning\n"
            "4,0x000011,40962,ACK credits=32\n"
            "6,0x000011,0,\n"
            "7,0x000011,40963,ACK credits=32\n");
  const auto two = inspect({fixture(), "-Y", "ip.src == 10.0.0.2", "-c", "2", "--json"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const auto js = json_lines(two.out);
  ASSERT_EQ(js.size(), 2u);
  EXPECT_EQ(js[0]["frame"].u64(), 4u);
  EXPECT_EQ(js[1]["frame"].u64(), 6u);
  // -c counts frames shown: the table has its header and two frames.
  EXPECT_EQ(lines(inspect({fixture(), "-c", "2"}).out).size(), 3u);
}

TEST_F(InspectCli, DashEWithoutFieldsShowsMacAddresses) {
  const auto r = inspect({fixture(), "-e", "-c", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Src MAC"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("02:00:00:00:00:01  02:00:00:00:00:02"), std::string::npos) << r.out;
}

TEST_F(InspectCli, SeveralFilesAtOnceEachWithItsOwnNumbersAndSummary) {
  const auto r = inspect({fixture(), fixture(), "-T", "fields", "-e", "file", "-e", "frame", "-c", "13"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto l = lines(r.out);
  ASSERT_EQ(l.size(), 13u);
  EXPECT_EQ(l[10], fixture() + "\t11");
  EXPECT_EQ(l[11], fixture() + "\t1");
  const auto table = lines(inspect({fixture(), fixture()}).out);
  EXPECT_EQ(table.size(), 1u + 2 * (1 + 11));
  EXPECT_EQ(table[1], "==> " + fixture() + " <==");
  const auto s = json_lines(inspect({fixture(), (dir_ / "missing.pcap").string(), fixture(), "--summary", "--json"}).out);
  EXPECT_EQ(s.size(), 2u);  // the missing file gets its error line, the others their summaries
}

TEST_F(InspectCli, SummaryShowsConnectionsAndPlotDrawsThem) {
  const std::string svg = (dir_ / "psn.svg").string();
  const auto r = inspect({fixture(), "--summary", "--plot", svg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("A 10.0.0.1 qp 0x000011 <-> B 10.0.0.2 qp 0x000012  RC"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CNPs: 0 to B's QP, 1 to A's QP"), std::string::npos) << r.out;
  const auto pic = test::read_file(svg);
  const std::string text(reinterpret_cast<const char*>(pic.data()), pic.size());
  EXPECT_EQ(text.rfind("<?xml", 0), 0u);
  EXPECT_NE(text.find("QP 0x000012"), std::string::npos);
}

TEST_F(InspectCli, DcFramesAreDecodedAsDc) {
  const std::string path = (dir_ / "dc.pcap").string();
  capture::CaptureWriter w;
  ASSERT_TRUE(w.open(path, capture::LinkType::Ethernet)) << w.error();
  roce::test::VendorFrameSpec s;
  s.opcode = 0x4A;
  s.ext.reth.dma_length.set(8);
  s.payload.assign(8, std::byte{1});
  ASSERT_TRUE(w.write(demo::kDemoStartSec, 0, roce::test::dc_frame(s)));
  s.opcode = 0x51;
  s.payload.clear();
  ASSERT_TRUE(w.write(demo::kDemoStartSec, 5, roce::test::dc_frame(s)));
  ASSERT_TRUE(w.close());
  const auto js = json_lines(inspect({path, "--json"}).out);
  ASSERT_EQ(js.size(), 2u);
  EXPECT_EQ(js[0]["verdict"].str(), "dc");
  EXPECT_EQ(js[0]["opcode.name"].str(), "DC_RDMA_WRITE_ONLY");
  EXPECT_EQ(js[0]["dc.eth"].str(), "0x1122334455667788");
  EXPECT_EQ(js[1]["opcode.name"].str(), "DC_ACKNOWLEDGE");
  EXPECT_EQ(js[1]["icrc"].str(), "ok");
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
  EXPECT_EQ(js[0]["icrc"]["ok"].u64(), 624u);  // RoCEv1 ICRCs (GRH masked) verify too
  EXPECT_EQ(js[0]["icrc"]["bad"].u64(), 0u);
}

}  // namespace
}  // namespace roce::inspect::inspect_cli_test
