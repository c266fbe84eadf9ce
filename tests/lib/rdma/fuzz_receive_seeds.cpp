// Writes the seed corpus of fuzz_receive (input format in fuzz_receive_world.hpp): frames aimed
// at the world (the right answers to our outstanding requests, NAKs, requests of every kind
// for the RC, UC and UD QPs, a CNP), and windows of consecutive frames from the pcap files
// under the given directories (the repository's pcap/ fixtures, the shared captures), with
// their PSNs made relative so that retargeting lines them up with the world.
//   fuzz_receive_seeds <out-dir> <pcap-dir>...
#include <dirent.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "protocol/aeth.hpp"
#include "protocol/builder.hpp"
#include "protocol/parser.hpp"
#include "protocol/psn.hpp"
#include "tests/lib/rdma/fuzz_receive_world.hpp"
#include "tests/support/capture_file.hpp"

namespace {

using namespace roce::proto;
using namespace roce::fuzz;
using Frame = std::vector<std::byte>;

constexpr std::size_t kWindow = 12;
constexpr std::size_t kMaxWindowsPerCapture = 24;

Frame build(Opcode op, std::uint32_t psn, const ExtHeaders& ext, std::size_t payload, bool ack_req = true) {
  FrameSpec s;
  s.eth.dst = kOurMac;
  s.eth.src = kPeerMac;
  s.ipv4.src = kPeerIp;
  s.ipv4.dst = kOurIp;
  s.bth.opcode = raw(op);
  s.bth.pkey.set(Bth::kDefaultPkey);
  s.bth.psn.set(psn & kPsnMask);
  s.bth.set_ack_requested(ack_req);
  s.ext = ext;
  s.validate = false;
  const Frame data(payload, std::byte{0x3C});
  Frame out(payload + 256);
  const FrameLayout l = build_frame(s, data, out, CrcBackend::Isal);
  out.resize(l.ok() ? l.length : 0);
  return out;
}

ExtHeaders reth(std::uint64_t va, std::uint32_t rkey, std::uint32_t len) {
  ExtHeaders e;
  e.reth = Reth{Be64::of(va), Be32::of(rkey), Be32::of(len)};
  return e;
}
ExtHeaders atomic(std::uint64_t va, std::uint32_t rkey) {
  ExtHeaders e;
  e.atomic = AtomicEth{Be64::of(va), Be32::of(rkey), Be64::of(1), Be64::of(0)};
  return e;
}
ExtHeaders aeth(Syndrome s, std::uint32_t msn) {
  ExtHeaders e;
  e.aeth = Aeth{s.raw, Be24::of(msn)};
  return e;
}

bool write_seed(const std::string& dir, const std::string& name, std::uint8_t flags, const std::vector<Frame>& frames) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.put(static_cast<char>(flags));
  for (const Frame& f : frames) {
    out.put(static_cast<char>(f.size() & 0xFF));
    out.put(static_cast<char>(f.size() >> 8));
    out.write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
  }
  return static_cast<bool>(out);
}

std::size_t world_seeds(const std::string& dir) {
  const std::uint8_t aim = kRetarget | kMapRkeys;
  std::size_t n = 0;
  // The peer answers all our requests (response PSNs are offsets from our first PSN).
  std::vector<Frame> answers = {build(Opcode::RcAck, 2, aeth(Syndrome::ack(), 1), 0)};
  for (std::uint32_t i = 0; i < 5; ++i) {
    const Opcode op = i == 0 ? Opcode::RcReadResponseFirst : i == 4 ? Opcode::RcReadResponseLast : Opcode::RcReadResponseMiddle;
    answers.push_back(build(op, kReadFirstPsnOffset + i, i == 0 || i == 4 ? aeth(Syndrome::ack(), 2) : ExtHeaders{},
                            i == 4 ? kReadBytes - 4 * kPmtu : kPmtu, false));
  }
  ExtHeaders aack = aeth(Syndrome::ack(), 3);
  aack.atomic_ack.original_data.set(41);
  answers.push_back(build(Opcode::RcAtomicAck, kAtomicPsnOffset, aack, 0));
  answers.push_back(build(Opcode::RcAck, kSendPsnOffset, aeth(Syndrome::ack(), 4), 0));
  // ATOMIC_WRITE and FLUSH are answered by zero-length READ responses ONLY.
  answers.push_back(build(Opcode::RcReadResponseOnly, kAtomicWritePsnOffset, aeth(Syndrome::ack(), 5), 0));
  answers.push_back(build(Opcode::RcReadResponseOnly, kFlushPsnOffset, aeth(Syndrome::ack(), 6), 0));
  n += write_seed(dir, "world-answers", aim, answers);
  n += write_seed(dir, "world-nak-seq", aim, {build(Opcode::RcAck, 0, aeth(Syndrome::nak(NakCode::PsnSequenceError), 0), 0)});
  n += write_seed(dir, "world-rnr", aim, {build(Opcode::RcAck, 0, aeth(Syndrome::rnr_nak(1), 0), 0)});
  n += write_seed(dir, "world-nak-access", aim,
                  {build(Opcode::RcAck, kReadFirstPsnOffset, aeth(Syndrome::nak(NakCode::RemoteAccessError), 1), 0)});
  // Requests of every kind (R_Key 0 maps to the exposed region, odd ones to the read-only one).
  n += write_seed(dir, "world-write", aim,
                  {build(Opcode::RcWriteFirst, 0, reth(0, 0, 2500), kPmtu, false), build(Opcode::RcWriteMiddle, 1, {}, kPmtu, false),
                   build(Opcode::RcWriteLast, 2, {}, 2500 - 2 * kPmtu), build(Opcode::RcWriteOnly, 3, reth(4096, 0, 64), 64)});
  ExtHeaders imm = reth(100, 0, 8);
  imm.imm.bytes = {1, 2, 3, 4};
  ExtHeaders inv;
  inv.ieth.rkey.set(0x1234);
  n += write_seed(dir, "world-send", aim,
                  {build(Opcode::RcSendFirst, 0, {}, kPmtu, false), build(Opcode::RcSendLast, 1, {}, 10),
                   build(Opcode::RcSendOnly, 2, {}, 20), build(Opcode::RcWriteOnlyImm, 3, imm, 8),
                   build(Opcode::RcSendOnlyInv, 4, inv, 8)});
  n += write_seed(dir, "world-read-atomic", aim,
                  {build(Opcode::RcReadRequest, 0, reth(0, 0, 3000), 0), build(Opcode::RcFetchAdd, 3, atomic(8, 0), 0),
                   build(Opcode::RcCmpSwap, 4, atomic(16, 0), 0), build(Opcode::RcReadRequest, 0, reth(0, 0, 3000), 0),
                   build(Opcode::RcFetchAdd, 3, atomic(8, 0), 0)});
  // ATOMIC_WRITE and FLUSH (range and whole region), through the region and through both
  // windows (R_Key % 4: 0 region, 2 type 1 window, 3 type 2 window), and a SEND that
  // invalidates a window.
  ExtHeaders flush_range = reth(256, 2, 512);
  flush_range.feth.bits.set(0x01);
  ExtHeaders flush_mr = reth(0, 3, 0);
  flush_mr.feth.bits.set(0x11);
  ExtHeaders inv_window;
  inv_window.ieth.rkey.set(0x1003);
  n += write_seed(dir, "world-placement-windows", aim,
                  {build(Opcode::RcAtomicWrite, 0, reth(24, 0, 8), 8), build(Opcode::RcAtomicWrite, 1, reth(32, 3, 8), 8),
                   build(Opcode::RcFlush, 2, flush_range, 0), build(Opcode::RcFlush, 3, flush_mr, 0),
                   build(Opcode::RcWriteOnly, 4, reth(64, 2, 32), 32), build(Opcode::RcReadRequest, 5, reth(0, 3, 100), 0),
                   build(Opcode::RcFetchAdd, 6, atomic(8, 2), 0), build(Opcode::RcSendOnlyInv, 7, inv_window, 8),
                   build(Opcode::RcAtomicWrite, 6, reth(24, 0, 8), 8)});
  ExtHeaders deth;
  deth.deth.qkey.set(kQkey);
  deth.deth.src_qp.set(kPeerQpn);
  // UC and UD share the SRQ: a multi-packet UC SEND holds a receive, a lost middle drops it.
  n += write_seed(dir, "world-srq", aim,
                  {build(Opcode::UcSendFirst, 0, {}, kPmtu), build(Opcode::UdSendOnly, 0, deth, 100),
                   build(Opcode::UcSendLast, 1, {}, 300), build(Opcode::UcSendFirst, 2, {}, kPmtu),
                   build(Opcode::UcSendLast, 4, {}, 10), build(Opcode::UdSendOnly, 0, deth, 100),
                   build(Opcode::UdSendOnly, 0, deth, 100), build(Opcode::UcSendOnly, 5, {}, 50)});
  n += write_seed(dir, "world-uc-ud", aim,
                  {build(Opcode::UcWriteFirst, 0, reth(0, 0, 1500), kPmtu), build(Opcode::UcWriteLast, 1, {}, 1500 - kPmtu),
                   build(Opcode::UcSendOnly, 2, {}, 30), build(Opcode::UdSendOnly, 0, deth, 200)});
  n += write_seed(dir, "world-cnp", aim, {build(Opcode::Cnp, 0, {}, 0, false)});
  return n;
}

std::vector<std::string> pcaps_under(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".pcap") == 0)
      out.push_back(path);
    else if (e->d_type == DT_DIR)
      for (auto& p : pcaps_under(path)) out.push_back(p);
  }
  closedir(d);
  return out;
}

// Windows of consecutive frames; requests' PSNs become offsets from the window's first
// request, responses' from its first response, so retargeting lines them up with the world.
std::size_t capture_seeds(const std::string& out_dir, const std::string& dir) {
  std::size_t n = 0;
  for (const auto& path : pcaps_under(dir)) {
    const auto pcap = roce::test::read_capture(path);
    if (!pcap.error.empty() || pcap.link != roce::capture::LinkType::Ethernet) continue;
    const std::string base = path.substr(path.rfind('/') + 1);
    const std::size_t windows = (pcap.records.size() + kWindow - 1) / kWindow;
    const std::size_t step = windows / kMaxWindowsPerCapture + 1;
    for (std::size_t w = 0; w < windows; w += step) {
      std::vector<Frame> frames;
      std::optional<std::uint32_t> first_request, first_response;
      for (std::size_t i = w * kWindow; i < std::min(pcap.records.size(), (w + 1) * kWindow); ++i) {
        Frame f = pcap.records[i].data;
        Packet p;
        ParseOptions o;
        o.verify_icrc = false;
        if (parse_frame(f, o, p) == ParseError::None && p.info->transport != Transport::Cnp) {
          auto& first = p.info->is_request ? first_request : first_response;
          if (!first) first = p.psn();
          Bth bth;
          std::memcpy(&bth, f.data() + p.bth_offset, sizeof bth);
          bth.psn.set(static_cast<std::uint32_t>(psn_diff(p.psn(), *first)) & kPsnMask);
          std::memcpy(f.data() + p.bth_offset, &bth, sizeof bth);
        }
        frames.push_back(std::move(f));
      }
      n += write_seed(out_dir, "capture-" + base + "-" + std::to_string(w), kRetarget | kMapRkeys, frames);
    }
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <out-dir> <pcap-dir>...\n", argv[0]);
    return 2;
  }
  const std::size_t built = world_seeds(argv[1]);
  std::size_t captured = 0;
  for (int i = 2; i < argc; ++i) captured += capture_seeds(argv[1], argv[i]);
  std::printf("fuzz_receive_seeds: %zu built, %zu from captures -> %s\n", built, captured, argv[1]);
  return built > 0 ? 0 : 1;
}
