// Every frame of every real capture in ../shared/captures goes through the parser: RoCEv2
// frames must parse, their ICRC must verify with each CRC backend, RoCEv1 must be told apart,
// and the per-opcode counts must match an independent decoder (tshark).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "capture/capture_reader.hpp"
#include "capture/frame_decoder.hpp"
#include "tests/support/captures_dir.hpp"

namespace roce::proto::captures_conformance_test {
namespace {

namespace fs = std::filesystem;
using capture::Verdict;

struct Expected {
  std::uint64_t frames;
  std::uint64_t rocev2;
  std::uint64_t rocev1;
  std::map<std::uint8_t, std::uint64_t> opcodes;  // RoCEv2 frames per BTH opcode
};

// Counts from tshark 4.0.17 (Debian 12), one run per file:
//   frames: tshark -r F | wc -l;  RoCEv1: tshark -r F -Y 'eth.type==0x8915' | wc -l
//   RoCEv2 per opcode: tshark --disable-protocol tftp -r F -Y 'infiniband.bth && udp'
//                        -T fields -e infiniband.bth.opcode | sort | uniq -c
// TFTP is disabled because the Huawei NIC uses UDP source port 69, which tshark otherwise
// decodes as TFTP (37 of hns_send_with_imm's 105 RoCEv2 frames). "&& udp" keeps the RoCEv1
// frames, which tshark also decodes as BTH, out of the RoCEv2 counts.
const std::map<std::string, Expected>& expected_by_file() {
  static const std::map<std::string, Expected> table{
      {"connectx4lx_cnp.pcap", {1, 1, 0, {{0x81, 1}}}},
      {"connectx_ib_send_bw.pcap", {45, 10, 0, {{0x04, 5}, {0x11, 5}}}},
      {"connectx_mixed_rocev1_v2.pcap", {624, 301, 323, {{0x00, 55}, {0x01, 119}, {0x02, 51}, {0x11, 76}}}},
      {"connectx_rdma_cm_write.pcap", {17, 17, 0, {{0x04, 4}, {0x0a, 2}, {0x11, 6}, {0x64, 5}}}},
      {"connectx_send_multi_qp.pcap", {708, 708, 0, {{0x00, 120}, {0x01, 265}, {0x02, 148}, {0x11, 175}}}},
      {"connectx_send_recv.pcap", {9, 9, 0, {{0x04, 2}, {0x11, 2}, {0x64, 5}}}},
      {"connectx_write_read.pcap",
       {16, 13, 0, {{0x04, 2}, {0x0a, 1}, {0x0c, 1}, {0x10, 1}, {0x11, 3}, {0x64, 5}}}},
      {"hns_send_with_imm.pcap", {123, 105, 0, {{0x00, 33}, {0x03, 33}, {0x05, 2}, {0x11, 37}}}},
      {"rxe/host_rc_pingpong_vs_rxe.pcap", {30, 16, 0, {{0x04, 8}, {0x11, 8}}}},
      {"rxe/ib_read_bw.pcap", {210, 160, 0, {{0x0c, 32}, {0x0d, 32}, {0x0e, 64}, {0x0f, 32}}}},
      {"rxe/ib_send_bw.pcap", {198, 160, 0, {{0x00, 32}, {0x01, 64}, {0x02, 32}, {0x11, 32}}}},
      {"rxe/ib_write_bw.pcap", {211, 160, 0, {{0x06, 32}, {0x07, 64}, {0x08, 32}, {0x11, 32}}}},
      {"rxe/rc_pingpong.pcap", {101, 80, 0, {{0x00, 16}, {0x01, 32}, {0x02, 16}, {0x11, 16}}}},
  };
  return table;
}

struct Observed {
  std::uint64_t frames = 0;
  std::map<Verdict, std::uint64_t> verdicts;
  std::map<std::uint8_t, std::uint64_t> opcodes;
  std::map<IcrcStatus, std::uint64_t> icrc;
  std::vector<std::string> failures;  // RoCEv2-port frames the parser refused, with the reason
  std::vector<Packet> cnps;
};

Observed read_capture(const fs::path& file, CrcBackend crc) {
  Observed o;
  capture::CaptureReader reader;
  if (!reader.open(file.string())) {
    o.failures.push_back("open: " + reader.error());
    return o;
  }
  ParseOptions opts;
  opts.crc = crc;
  capture::CaptureRecord rec;
  capture::DecodedFrame frame;
  capture::ReadStatus st;
  while ((st = reader.next(rec)) == capture::ReadStatus::Record) {
    ++o.frames;
    capture::decode_frame(reader.link_type(), rec.data, opts, frame);
    ++o.verdicts[frame.verdict];
    if (frame.verdict == Verdict::Malformed)
      o.failures.push_back("frame " + std::to_string(rec.index) + ": " + to_string(frame.error));
    if (frame.verdict != Verdict::Roce) continue;
    ++o.opcodes[frame.packet.opcode()];
    ++o.icrc[frame.packet.icrc_status];
    if (frame.packet.icrc_status != IcrcStatus::Ok)
      o.failures.push_back("frame " + std::to_string(rec.index) + ": icrc " + to_string(frame.packet.icrc_status));
    if (frame.packet.opcode() == raw(Opcode::Cnp)) o.cnps.push_back(frame.packet);
  }
  if (st == capture::ReadStatus::Error) o.failures.push_back("read: " + reader.error());
  return o;
}

std::vector<fs::path> capture_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".pcap" || ext == ".pcapng")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class CapturesConformance : public ::testing::TestWithParam<CrcBackend> {
 protected:
  void SetUp() override {
    std::string why;
    const auto d = test::find_captures_dir(why);
    if (!d) GTEST_SKIP() << why;
    dir_ = *d;
  }
  fs::path dir_;
};

TEST_P(CapturesConformance, EveryFrameClassifiesAndEveryIcrcVerifiesWithTsharkCounts) {
  const auto files = capture_files(dir_);
  ASSERT_FALSE(files.empty()) << "no .pcap files under " << dir_;
  std::set<std::string> seen;
  std::uint64_t icrc_ok = 0;
  for (const auto& f : files) {
    const std::string rel = fs::relative(f, dir_).generic_string();
    SCOPED_TRACE(rel);
    seen.insert(rel);
    const auto it = expected_by_file().find(rel);
    ASSERT_NE(it, expected_by_file().end()) << rel << " has no expected counts: add them from tshark";
    const Expected& want = it->second;
    Observed got = read_capture(f, GetParam());

    EXPECT_TRUE(got.failures.empty()) << ::testing::PrintToString(got.failures);
    EXPECT_EQ(got.frames, want.frames);
    EXPECT_EQ(got.verdicts[Verdict::Roce], want.rocev2);
    EXPECT_EQ(got.verdicts[Verdict::RoceV1], want.rocev1);
    EXPECT_EQ(got.verdicts[Verdict::Malformed], 0u);
    EXPECT_EQ(got.verdicts[Verdict::NotRoce], want.frames - want.rocev2 - want.rocev1);
    EXPECT_EQ(got.opcodes, want.opcodes);
    // captures/README.md: every RoCEv2 frame in these files is complete and its ICRC verifies.
    EXPECT_EQ(got.icrc[IcrcStatus::Ok], want.rocev2);
    EXPECT_EQ(got.icrc[IcrcStatus::Bad], 0u);
    icrc_ok += got.icrc[IcrcStatus::Ok];
  }
  for (const auto& [name, want] : expected_by_file())
    EXPECT_TRUE(seen.count(name)) << name << " is in the expectations but not under " << dir_;
  std::printf("[ %s ] %s: %llu RoCEv2 ICRCs ok, 0 bad, in %zu files\n", to_string(GetParam()).c_str(),
              dir_.c_str(), static_cast<unsigned long long>(icrc_ok), files.size());
}

TEST_P(CapturesConformance, ConnectX4LxCnpCarriesBecnForQp0x118FromSourcePortZero) {
  const Observed got = read_capture(dir_ / "connectx4lx_cnp.pcap", GetParam());
  ASSERT_EQ(got.cnps.size(), 1u);
  const Packet& cnp = got.cnps.front();
  EXPECT_TRUE(cnp.bth.becn());
  EXPECT_FALSE(cnp.bth.fecn());
  EXPECT_EQ(cnp.dest_qp(), 0x118u);
  EXPECT_EQ(cnp.psn(), 0u);
  EXPECT_EQ(cnp.udp_src_port, 0);
  EXPECT_EQ(cnp.ipv4.tos, 0xC2);
  EXPECT_EQ(cnp.icrc, 0x2A00FD82u);  // wire bytes 82 fd 00 2a
  EXPECT_EQ(cnp.icrc_status, IcrcStatus::Ok);
}

INSTANTIATE_TEST_SUITE_P(AllCrcBackends, CapturesConformance,
                         ::testing::Values(CrcBackend::Portable, CrcBackend::Zlib, CrcBackend::Isal),
                         [](const auto& info) { return to_string(info.param); });

}  // namespace
}  // namespace roce::proto::captures_conformance_test
