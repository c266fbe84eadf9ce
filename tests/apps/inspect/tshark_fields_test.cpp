// roce-inspect against tshark (Wireshark's InfiniBand dissector), field by field, on every frame
// of every capture: the real ones in ../shared/captures, the project's own in pcap/, and one made
// here with what those lack (DC, RoCEv1, UD to QP1, atomics, immediate and invalidate, IPv6, a
// VLAN tag, frames cut by the snap length). The captures are concatenated with mergecap and
// decoded by one tshark run: tshark takes seconds to start here, and CI time is short.
// Skips, saying why, when tshark or mergecap is missing.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "capture/capture_writer.hpp"
#include "protocol/builder.hpp"
#include "tests/support/captures_dir.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vendor_frames.hpp"

#ifndef ROCE_INSPECT_BIN
#define ROCE_INSPECT_BIN ""
#endif
#ifndef ROCE_TSHARK
#define ROCE_TSHARK ""
#endif
#ifndef ROCE_MERGECAP
#define ROCE_MERGECAP ""
#endif

namespace roce::inspect {
namespace {

namespace fs = std::filesystem;

// How a value is written on each side, so the two can be compared.
enum class Form { Number, Bytes, Text, Swapped32 };

struct Pair {
  const char* tshark;
  const char* ours;
  Form form = Form::Number;
  const char* ours_too = nullptr;  // another field of ours tshark shows under the same name
  bool when_theirs = false;        // compared only where tshark has it (ours is one field for several of its)
};

// tshark 4.0's names (tshark -G fields) and ours. ImmDt and IETH are bytes to tshark, numbers
// to us; its invariant CRC reads the four ICRC bytes big-endian, ours is the CRC value (the wire
// stores it least-significant byte first). RoCEv1 addresses are the GRH's GIDs. tshark shows an
// AtomicETH's address and R_Key under the RETH's names.
const std::vector<Pair> kPairs = {
    {"infiniband.bth.opcode", "opcode"},
    {"infiniband.bth.se", "se"},
    {"infiniband.bth.m", "m"},
    {"infiniband.bth.padcnt", "padcnt"},
    {"infiniband.bth.tver", "tver"},
    {"infiniband.bth.p_key", "pkey"},
    {"infiniband.bth.destqp", "qpn"},
    {"infiniband.bth.a", "ackreq"},
    {"infiniband.bth.psn", "psn"},
    {"infiniband.rdeth.eecnxt", "rdeth.eecnxt"},
    {"infiniband.deth.q_key", "deth.qkey"},
    {"infiniband.deth.srcqp", "deth.srcqp"},
    {"infiniband.reth.va", "reth.va", Form::Number, "atomic.va"},
    {"infiniband.reth.r_key", "reth.rkey", Form::Number, "atomic.rkey"},
    {"infiniband.reth.dmalen", "reth.len"},
    {"infiniband.atomiceth.swapdt", "atomic.swap"},
    {"infiniband.atomiceth.cmpdt", "atomic.compare"},
    {"infiniband.aeth.syndrome", "aeth.syndrome"},
    {"infiniband.aeth.msn", "aeth.msn"},
    {"infiniband.atomicacketh.origremdt", "atomicack.orig"},
    {"infiniband.immdt", "immdt", Form::Bytes},
    {"infiniband.ieth", "ieth.rkey", Form::Bytes},
    {"infiniband.invariant.crc", "icrc.value", Form::Swapped32},
    {"udp.srcport", "udp.srcport"},
    // QP1's CM MADs (the connectx captures made with rdma_cm). tshark shows no header for a
    // reserved management class (the 0x61 of the UD frame made here); we do.
    {"infiniband.mad.mgmtclass", "mad.class", Form::Number, nullptr, true},
    {"infiniband.mad.attributeid", "mad.attribute", Form::Number, nullptr, true},
    {"infiniband.mad.transactionid", "mad.tid", Form::Number, nullptr, true},
    {"infiniband.cm.req.serviceid", "cm.service_id"},
    {"infiniband.cm.req.localqpn", "cm.qpn", Form::Number, nullptr, true},
    {"infiniband.cm.req.startpsn", "cm.psn", Form::Number, nullptr, true},
    {"infiniband.cm.rep.localqpn", "cm.qpn", Form::Number, nullptr, true},
    {"infiniband.cm.rep.startpsn", "cm.psn", Form::Number, nullptr, true},
    {"infiniband.cm.rej.reason", "cm.rej_reason"},
};

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::vector<std::vector<std::string>> rows(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(split(l, '\t'));
  return out;
}

std::optional<std::uint64_t> number(const std::string& s, Form f) {
  if (s.empty()) return std::nullopt;
  try {
    if (f == Form::Bytes) return std::stoull(s, nullptr, 16);  // "deadbeef"
    return std::stoull(s, nullptr, 0);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::uint32_t byteswap32(std::uint64_t v) {
  const auto x = static_cast<std::uint32_t>(v);
  return (x >> 24) | ((x >> 8) & 0xFF00) | ((x << 8) & 0xFF0000) | (x << 24);
}

// The frames no capture here has, in one Ethernet pcap (snap length 200, so long frames are cut).
void write_extras(const std::string& path) {
  using namespace proto;
  capture::CaptureWriter w;
  ASSERT_TRUE(w.open(path, capture::LinkType::Ethernet, 200)) << w.error();
  std::uint32_t usec = 0;
  auto put = [&](const std::vector<std::byte>& f) { ASSERT_TRUE(w.write(1'700'000'000, usec += 10, f)) << w.error(); };
  auto rc = [](Opcode op, std::uint32_t payload, auto&& fill) {
    FrameSpec s;
    s.ipv4.src = {192, 168, 1, 1};
    s.ipv4.dst = {192, 168, 1, 2};
    s.bth.opcode = raw(op);
    s.bth.pkey.set(0x8001);
    s.bth.dest_qp.set(0x000ABC);
    s.bth.psn.set(0x123456);
    s.bth.set_ack_requested(true);
    s.udp_src_port = 0xD123;
    fill(s);
    std::vector<std::byte> out(layout_frame(s, payload).length);
    EXPECT_TRUE(build_frame(s, std::vector<std::byte>(payload, std::byte{0x61}), out, CrcBackend::Isal).ok());
    return out;
  };
  put(rc(Opcode::UdSendOnly, 256, [](FrameSpec& s) {
    s.bth.dest_qp.set(1);
    s.ext.deth.qkey.set(0x80010000);
    s.ext.deth.src_qp.set(1);
  }));
  put(rc(Opcode::UdSendOnlyImm, 20, [](FrameSpec& s) {
    s.ext.deth.qkey.set(0x1234);
    s.ext.deth.src_qp.set(0x77);
    s.ext.imm.bytes = {1, 2, 3, 4};
  }));
  put(rc(Opcode::RcCmpSwap, 0, [](FrameSpec& s) {
    s.ext.atomic.va.set(0x0000AAAA00001000ull);
    s.ext.atomic.rkey.set(0x55);
    s.ext.atomic.swap_add.set(0x1111222233334444ull);
    s.ext.atomic.compare.set(0x5555666677778888ull);
  }));
  put(rc(Opcode::RcFetchAdd, 0, [](FrameSpec& s) { s.ext.atomic.swap_add.set(7); }));
  put(rc(Opcode::RcAtomicAck, 0, [](FrameSpec& s) {
    s.ext.aeth.syndrome = 0x1F;
    s.ext.aeth.msn.set(9);
    s.ext.atomic_ack.original_data.set(0x0102030405060708ull);
  }));
  put(rc(Opcode::RcWriteOnlyImm, 33, [](FrameSpec& s) {
    s.ext.reth.va.set(0x7F00);
    s.ext.reth.rkey.set(0xABCD);
    s.ext.reth.dma_length.set(33);
    s.ext.imm.bytes = {0xDE, 0xAD, 0xBE, 0xEF};
  }));
  put(rc(Opcode::RcSendOnlyInv, 5, [](FrameSpec& s) { s.ext.ieth.rkey.set(0x4321); }));
  put(rc(Opcode::RcAck, 0, [](FrameSpec& s) {
    s.ext.aeth.syndrome = 0x62;  // NAK remote access error
    s.ext.aeth.msn.set(77);
  }));
  put(rc(Opcode::RcWriteFirst, 1024, [](FrameSpec& s) {  // cut at 200 bytes
    s.ext.reth.dma_length.set(4096);
  }));
  put(rc(Opcode::RcSendOnly, 16, [](FrameSpec& s) {
    s.ip_version = IpVersion::V6;
    s.ipv6.src[15] = 1;
    s.ipv6.dst[15] = 2;
  }));
  put(rc(Opcode::RcSendOnly, 16, [](FrameSpec& s) {
    s.eth.vlan_count = 1;
    s.eth.vlan_tpid[0] = kEtherTypeVlan;
    s.eth.vlan_tci[0] = 42;
  }));
  test::VendorFrameSpec dc;
  dc.opcode = 0x4A;
  dc.ext.rdeth.ee_context.set(0x0F0F0F);
  dc.ext.deth.qkey.set(0xCAFEF00D);
  dc.ext.deth.src_qp.set(0x000123);
  dc.ext.reth.va.set(0x1000);
  dc.ext.reth.rkey.set(0x22);
  dc.ext.reth.dma_length.set(12);
  dc.payload.assign(12, std::byte{0x42});
  put(test::dc_frame(dc));
  dc.payload.clear();
  dc.opcode = 0x51;
  dc.ext.aeth.syndrome = 0x60;
  dc.ext.aeth.msn.set(5);
  put(test::dc_frame(dc));
  dc.opcode = 0x4D;
  dc.payload.assign(16, std::byte{1});
  put(test::dc_frame(dc));
  dc.opcode = 0x45;
  dc.ext.imm.bytes = {9, 8, 7, 6};
  put(test::dc_frame(dc));
  test::VendorFrameSpec v1;
  v1.opcode = raw(Opcode::RcWriteOnly);
  v1.ext.reth.va.set(0x2000);
  v1.ext.reth.rkey.set(0x33);
  v1.ext.reth.dma_length.set(40);
  v1.payload.assign(40, std::byte{2});
  put(test::rocev1_frame(v1));
  v1.opcode = raw(Opcode::RcAck);
  v1.payload.clear();
  v1.ext.aeth.syndrome = 0x1F;
  v1.ext.aeth.msn.set(1);
  put(test::rocev1_frame(v1));
  ASSERT_TRUE(w.close()) << w.error();
}

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

TEST(InspectVsTshark, EveryFrameOfEveryCaptureDecodesToTsharksFields) {
  const std::string tshark = env_or("ROCE_TSHARK", ROCE_TSHARK);
  const std::string mergecap = env_or("ROCE_MERGECAP", ROCE_MERGECAP);
  if (tshark.empty() || !fs::exists(tshark)) GTEST_SKIP() << "tshark (Debian package tshark) not found";
  if (mergecap.empty() || !fs::exists(mergecap)) GTEST_SKIP() << "mergecap (Debian package wireshark-common) not found";
  const std::string inspect = env_or("ROCE_INSPECT_BIN", ROCE_INSPECT_BIN);
  ASSERT_TRUE(fs::exists(inspect)) << inspect;

  test::TempDir dir;
  std::vector<std::string> inputs;
  std::string why;
  bool shared_found = false;
  if (const auto shared = test::find_captures_dir(why)) {
    shared_found = true;
    for (const auto& e : fs::recursive_directory_iterator(*shared))
      if (e.path().extension() == ".pcap") inputs.push_back(e.path().string());
  } else {
    std::printf("note: ../shared/captures not found (%s); comparing the project's own captures only\n", why.c_str());
  }
  const fs::path pcap_dir = fs::path(ROCE_SOURCE_ROOT) / "pcap";
  for (const auto& e : fs::recursive_directory_iterator(pcap_dir))
    if (e.path().extension() == ".pcap") inputs.push_back(e.path().string());
  const std::string extras = (dir / "extras.pcap").string();
  write_extras(extras);
  inputs.push_back(extras);
  std::sort(inputs.begin(), inputs.end());

  const std::string merged = (dir / "all.pcap").string();
  std::vector<std::string> margs{"-a", "-F", "pcap", "-w", merged};
  margs.insert(margs.end(), inputs.begin(), inputs.end());
  const auto m = test::run_command(mergecap, margs);
  ASSERT_EQ(m.exit_code, 0) << m.err;

  // tshark: UDP port 69 (the Huawei NIC's source port) would go to TFTP before 4791.
  std::vector<std::string> targs{"-n", "-r", merged, "--disable-protocol", "tftp", "-T", "fields", "-E", "occurrence=f",
                                 "-e", "frame.number", "-e", "ip.src", "-e", "ip.dst", "-e", "infiniband.grh.sgid", "-e",
                                 "infiniband.grh.dgid", "-e", "ipv6.src", "-e", "ipv6.dst"};
  std::vector<std::string> oargs{merged, "-T", "fields", "-e", "frame", "-e", "ip.src", "-e", "ip.dst", "-e", "ip.version", "-e",
                                 "verdict"};
  for (const Pair& p : kPairs) {
    targs.insert(targs.end(), {"-e", p.tshark});
    oargs.insert(oargs.end(), {"-e", p.ours});
  }
  for (const Pair& p : kPairs)
    if (p.ours_too) oargs.insert(oargs.end(), {"-e", p.ours_too});
  const auto t = test::run_command(tshark, targs);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const auto o = test::run_command(inspect, oargs);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto theirs = rows(t.out), ours = rows(o.out);
  ASSERT_EQ(theirs.size(), ours.size());

  std::size_t roce = 0, v1 = 0, dc = 0, compared = 0, mads = 0;
  for (std::size_t i = 0; i < theirs.size(); ++i) {
    const auto& T = theirs[i];
    const auto& O = ours[i];
    constexpr std::size_t kT = 7, kO = 5;  // columns before the pairs
    ASSERT_EQ(T.size(), kT + kPairs.size());
    ASSERT_GE(O.size(), kO + kPairs.size());
    SCOPED_TRACE("merged frame " + T[0]);
    ASSERT_EQ(T[0], O[0]);
    const bool tshark_bth = !T[kT].empty();
    const std::string& verdict = O[4];
    // Every frame tshark reads a BTH in, we decode; and the other way round.
    EXPECT_EQ(tshark_bth, !O[kO].empty()) << "verdict " << verdict;
    if (!tshark_bth) continue;
    EXPECT_TRUE(verdict == "roce" || verdict == "dc" || verdict == "rocev1") << verdict;
    roce += verdict == "roce";
    dc += verdict == "dc";
    v1 += verdict == "rocev1";
    // Addresses: IPv4, IPv6, or the GRH GIDs of RoCEv1.
    const std::size_t src = !T[3].empty() ? 3 : !T[5].empty() ? 5 : 1;
    EXPECT_EQ(O[1], T[src]);
    EXPECT_EQ(O[2], T[src + 1]);
    std::size_t extra = kO + kPairs.size();
    for (std::size_t k = 0; k < kPairs.size(); ++k) {
      const Pair& p = kPairs[k];
      const std::string& tv = T[kT + k];
      std::string ov = O[kO + k];
      if (p.ours_too && ov.empty()) ov = O[extra];
      if (p.ours_too) ++extra;
      SCOPED_TRACE(std::string(p.tshark) + " '" + tv + "' vs " + p.ours + " '" + ov + "'");
      // The ICRC of a cut frame is not there (tshark shows whatever bytes it has instead), and
      // tshark 4.0 shows none after an IETH.
      if (p.form == Form::Swapped32 && (ov.empty() || tv.empty())) continue;
      if (p.when_theirs && tv.empty()) continue;
      const auto a = number(tv, p.form), b = number(ov, Form::Number);
      EXPECT_EQ(a.has_value(), b.has_value());
      if (!a || !b) continue;
      EXPECT_EQ(p.form == Form::Swapped32 ? byteswap32(*a) : *a, *b);
      ++compared;
      mads += std::string_view(p.ours) == "mad.attribute";
    }
  }
  std::printf("compared %zu fields of %zu RoCEv2 (%zu with a MAD), %zu DC and %zu RoCEv1 frames in %zu captures\n", compared,
              roce, mads, dc, v1, inputs.size());
  // Without ../shared/captures only the project's own captures are compared (about 150 frames).
  EXPECT_GT(roce, shared_found ? 1000u : 100u);
  EXPECT_GE(dc, 4u);
  EXPECT_GE(v1, 2u);
  if (shared_found) {
    EXPECT_GE(mads, 15u) << "the connectx captures' CM MADs";
  }
}

}  // namespace
}  // namespace roce::inspect
