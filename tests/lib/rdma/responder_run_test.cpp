// A responder's run of WRITEs (lib/rdma/responder_run.cpp): one QP's frames in one RX burst take
// the straight path with the QP's own checks made once, and must do exactly what the walk does
// frame by frame. Each scenario is played four times on engines built alike: the reference
// (TransportTuning::write_runs off, every frame received on its own), the same frames in one
// burst with runs on (receive() per frame, and handed over together: Engine::receive_frames, as
// a worker hands a burst), and frame by frame with runs on; what each engine then sends (byte
// for byte), its QPs' counters, states, PSNs and completions, the memory and the engine's drops
// must be the same.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "lib/rdma/payload.hpp"
#include "protocol/psn.hpp"
#include "tests/support/frame_edit.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::responder_run_test {
namespace {

using namespace roce::proto;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0xBD};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 11};
constexpr std::uint32_t kPeerQpn = 0x140;
constexpr std::uint32_t kPsn = 0xFFFFF0;  // the runs cross the PSN wrap
constexpr std::uint32_t kRegionBytes = 4096;
// Regions 0 and 1 belong to QP 0's protection domain, region 2 to QP 1's; each at a fixed
// address the peer names (the same in every engine of a comparison). Region 3 is registered
// only by a RegisterAgain step, in QP 0's domain, into the slot a deregistration of region 0
// freed (the table has three slots) and at region 0's address: other memory under another
// generation of region 0's key (RegisterAgain) or under that very key, the slot registered and
// deregistered until its 8-bit generation came back (RegisterUnderTheSameKey).
constexpr std::uint64_t kIova[4] = {0x100000, 0x200000, 0x300000, 0x100000};
constexpr unsigned kRegions = 4;

enum class Mode { Reference, Burst, Frames, FrameByFrame };

// One thing the scenario does: a WRITE packet from peer `qp`, a change to a region between
// two packets (during the burst, as another thread's deregistration or a peer's invalidation
// would come; or region 3 registered in region 0's slot), QP `qp`'s remote write access taken
// away (QP modify, RTS to RTS), or a look at everything between two bursts (Check: the burst so far ends, what
// the engine sends, its counters and the rest are recorded, and the next burst begins).
struct Step {
  enum class Kind { Packet, Deregister, Invalidate, RegisterAgain, RegisterUnderTheSameKey, RevokeRemoteWrite, Check } kind = Kind::Packet;
  unsigned qp = 0;
  Opcode op = Opcode::RcWriteOnly;
  std::uint32_t psn = 0;
  unsigned region = 0;       // whose R_Key the RETH names (and whose address) ...
  std::uint32_t key_xor = 0; // ... with these bits flipped
  std::uint64_t offset = 0;  // from the region's start
  std::uint32_t dma_length = 64;
  std::uint32_t payload = 64;
  bool ack_req = true;
  int corrupt = -1;  // a payload byte flipped after the ICRC was sealed (its index), or none
  Ecn ecn = Ecn::Ect0;
  std::uint16_t pkey = 0xFFFF;  // the QPs' partition
  // The built frame changed as a broken or hostile sender (or a bad link) would, the ICRC made
  // right again: its IPv4 checksum wrong, another destination address, a QPN no QP has, the
  // FECN bit or SE set (BTH bytes the run's straight test masks or compares).
  // NotIpv4: the EtherType made ARP's (Engine::receive_frames stops there; the caller hands it
  // to receive(), as a worker's receive_frame does with what is not ARP or NDP, and goes on).
  // The rest for the run's template (docs/perf-changes.md section 82), each made right again but
  // for the edit: IPv4 options (one NOP word), another UDP port, PadCnt 1 and TVer 1 on the same
  // lengths, an IP total length 4 longer than the UDP datagram, a UDP length 4 shorter, the last
  // byte cut, 6 bytes of Ethernet padding, another TTL, DSCP or source MAC, a UDP checksum, and
  // the opcode WRITE ONLY with immediate (the same bytes after the BTH).
  enum class Edit {
    None, IpChecksum, DestIp, UnknownQp, Fecn, Se, NotIpv4,
    IpOptions, UdpPort, PadCnt, TVer, IpLength, UdpLength, Cut, EthernetPadding, Ttl, Dscp, SrcMac, UdpChecksum, WriteImm
  } edit = Edit::None;
};

Step only(std::uint32_t psn, unsigned region, std::uint64_t offset, unsigned qp = 0) {
  Step s;
  s.qp = qp;
  s.psn = psn;
  s.region = region;
  s.offset = offset;
  return s;
}
Step packet(Opcode op, std::uint32_t psn, std::uint32_t payload, unsigned region = 0, std::uint64_t offset = 0,
            std::uint32_t dma_length = 0) {
  Step s;
  s.op = op;
  s.psn = psn;
  s.payload = payload;
  s.region = region;
  s.offset = offset;
  s.dma_length = dma_length;
  return s;
}
Step check() {
  Step s;
  s.kind = Step::Kind::Check;
  return s;
}
Step change(Step::Kind k, unsigned region) {
  Step s;
  s.kind = k;
  s.region = region;
  return s;
}

std::uint32_t psn(std::int32_t i) { return psn_add(kPsn, i); }

struct Observed {
  std::vector<std::vector<std::byte>> sent;
  std::vector<std::array<std::uint64_t, rdma::kCounterCount>> counters;
  std::vector<rdma::QpState> states;
  std::vector<std::uint32_t> epsn, msn;
  std::vector<std::vector<std::byte>> memory;
  std::vector<std::uint64_t> drops;
  std::vector<std::uint64_t> parse_drops;
  std::uint64_t received = 0;
  std::vector<std::uint32_t> completions;  // status, opcode, byte_len of each
  bool operator==(const Observed&) const = default;
};

// An engine with two RC QPs (in two protection domains) answering raw peers, at `mtu`.
class World {
 public:
  World(Mode mode, ibv_mtu mtu) : mode_(mode) {
    rdma::EngineConfig cfg = raw_peer_target(kPeerMac);
    cfg.tuning.write_runs = mode != Mode::Reference;
    cfg.match_flows = mode != Mode::Reference;  // the reference parses every frame
    engine_ = std::make_unique<rdma::Engine>(cfg, mrs_);
    for (unsigned i = 0; i < 2; ++i) {
      Endpoint ep = make_endpoint(*engine_, QpOptions{});
      to_rtr(*engine_, ep.qp, RawPeerPath{kPeerIp, kPeerQpn + i, kPsn, IBV_ACCESS_REMOTE_WRITE, 4, 14, mtu});
      to_rts(*engine_, ep.qp, 0x100, 1);
      eps_.push_back(ep);
      peers_.push_back(std::make_unique<RawPeer>(*engine_, kPeerMac, kPeerIp, kPeerQpn + i, ep.qp->qpn()));
    }
    for (auto& m : mem_) m.assign(kRegionBytes, std::byte{0});
    for (unsigned r = 0; r < 3; ++r) {
      auto mr = mrs_.register_region(eps_[r < 2 ? 0 : 1].pd, mem_[r].data(), kRegionBytes,
                                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, kIova[r]);
      EXPECT_TRUE(mr.ok());
      keys_[r] = mr.ok() ? (*mr)->rkey() : 0;
    }
  }

  // Plays `steps`; what each Check found, in order.
  std::vector<Observed> play(const std::vector<Step>& steps) {
    std::vector<Observed> checks;
    const bool burst = mode_ == Mode::Burst || mode_ == Mode::Frames;
    if (burst) engine_->begin_receive_burst();
    std::uint8_t fill = 1;
    for (const Step& s : steps) {
      if (s.kind != Step::Kind::Packet) hand_over();  // the frames before it first
      switch (s.kind) {
        case Step::Kind::Check:
          if (burst) engine_->end_receive_burst();
          checks.push_back(observe());
          if (burst) engine_->begin_receive_burst();
          break;
        case Step::Kind::Deregister: EXPECT_TRUE(mrs_.deregister(keys_[s.region]).ok()); break;
        case Step::Kind::Invalidate: EXPECT_TRUE(mrs_.invalidate(keys_[s.region], eps_[0].pd).ok()); break;
        case Step::Kind::RevokeRemoteWrite: {
          if (burst) engine_->end_receive_burst();  // a control call: the burst ends first
          ibv_qp_attr a{};
          a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
          EXPECT_TRUE(engine_->modify_qp(eps_[s.qp].qp, a, IBV_QP_ACCESS_FLAGS).ok());
          if (burst) engine_->begin_receive_burst();
          break;
        }
        case Step::Kind::RegisterAgain: {
          auto mr = mrs_.register_region(eps_[0].pd, mem_[3].data(), kRegionBytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                                         kIova[3]);
          EXPECT_TRUE(mr.ok());
          keys_[3] = mr.ok() ? (*mr)->rkey() : 0;
          EXPECT_EQ(keys_[3] >> 8, keys_[0] >> 8) << "region 0's slot, taken again";
          EXPECT_NE(keys_[3], keys_[0]);
          break;
        }
        case Step::Kind::RegisterUnderTheSameKey: {
          const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
          keys_[3] = 0;
          for (int i = 0; i < 256 && keys_[3] != keys_[0]; ++i) {
            auto mr = mrs_.register_region(eps_[0].pd, mem_[3].data(), kRegionBytes, access, kIova[3]);
            EXPECT_TRUE(mr.ok());
            keys_[3] = mr.ok() ? (*mr)->rkey() : 0;
            if (keys_[3] != keys_[0]) {
              EXPECT_TRUE(mrs_.deregister(keys_[3]).ok());
            }
          }
          EXPECT_EQ(keys_[3], keys_[0]) << "region 0's key, naming region 3's memory";
          break;
        }
        case Step::Kind::Packet: {
          const std::vector<std::byte> payload(s.payload, std::byte{fill++});
          const OpcodeInfo& info = opcode_info(raw(s.op));
          const ExtHeaders ext = info.starts_message()
                                     ? reth(kIova[s.region] + s.offset, keys_[s.region] ^ s.key_xor, s.dma_length ? s.dma_length : s.payload)
                                     : ExtHeaders{};
          peers_[s.qp]->set_pkey(s.pkey);
          std::vector<std::byte> f = peers_[s.qp]->frame(s.op, s.psn, ext, payload, s.ack_req, s.ecn);
          edit(f, s.edit);
          if (s.corrupt >= 0) {
            const std::size_t pad = (4 - s.payload % 4) % 4;
            f[f.size() - 4 - pad - s.payload + static_cast<std::size_t>(s.corrupt)] ^= std::byte{0x20};
          }
          if (mode_ == Mode::Frames) {
            pending_.push_back(std::move(f));
          } else {
            peers_[s.qp]->send(f, 0);
          }
          break;
        }
      }
    }
    hand_over();
    if (burst) engine_->end_receive_burst();
    return checks;
  }

  // Mode::Frames: the packets since the last step of another kind, in one receive_frames call
  // (again after a frame it left to the caller, which receive() takes).
  void hand_over() {
    std::vector<ByteSpan> frames(pending_.begin(), pending_.end());
    for (std::size_t at = 0; at < frames.size();) {
      const std::size_t took = engine_->receive_frames(std::span{frames}.subspan(at), 0);
      EXPECT_LE(took, frames.size() - at);
      at += took;
      if (at < frames.size()) {
        EXPECT_NE(load_header<EthernetHeader>(frames[at], 0).ether_type.get(), kEtherTypeIpv4) << "frame " << at << " stopped it";
        engine_->receive(frames[at++], 0);
        ++left_to_caller_;
      }
    }
    pending_.clear();
  }
  std::uint64_t left_to_caller() const { return left_to_caller_; }

  Observed observe() {
    Observed o;
    for (const Reply& r : peers_[0]->collect()) o.sent.push_back(r.frame);
    for (const Endpoint& ep : eps_) {
      o.counters.push_back(ep.qp->counters().values());
      o.states.push_back(ep.qp->state());
      o.epsn.push_back(ep.qp->responder().expected_psn());
      o.msn.push_back(ep.qp->responder().msn());
      ibv_wc wc[16];
      for (int n = ep.cq->poll(16, wc), i = 0; i < n; ++i)
        o.completions.insert(o.completions.end(), {static_cast<std::uint32_t>(wc[i].status), static_cast<std::uint32_t>(wc[i].opcode), wc[i].byte_len});
    }
    for (const auto& m : mem_) o.memory.push_back(m);
    for (std::size_t d = 0; d < static_cast<std::size_t>(rdma::EngineDrop::Count); ++d)
      o.drops.push_back(engine_->drops(static_cast<rdma::EngineDrop>(d)));
    for (std::size_t e = 0; e < static_cast<std::size_t>(ParseError::Count); ++e)
      o.parse_drops.push_back(engine_->parse_drops(static_cast<ParseError>(e)));
    o.received = engine_->received();
    return o;
  }

  static void edit(std::vector<std::byte>& f, Step::Edit e) {
    using namespace frame_edit;
    if (e == Step::Edit::None) return;
    auto ip = read_header<Ipv4Header>(f, kIpOffset);
    auto bth = read_header<Bth>(f, kBthOffset);
    switch (e) {
      case Step::Edit::None: break;
      case Step::Edit::IpChecksum: ip.checksum.set(static_cast<std::uint16_t>(ip.checksum.get() ^ 0x0101)); break;
      case Step::Edit::DestIp: ip.dst[3] = static_cast<std::uint8_t>(ip.dst[3] ^ 0x40); break;
      case Step::Edit::UnknownQp: bth.dest_qp.set(0x7777); break;
      case Step::Edit::Fecn: bth.resv8a = static_cast<std::uint8_t>(bth.resv8a | Bth::kFecn); break;
      case Step::Edit::Se: bth.flags = static_cast<std::uint8_t>(bth.flags | Bth::kSe); break;
      case Step::Edit::NotIpv4: {
        auto eth = read_header<EthernetHeader>(f, 0);
        eth.ether_type.set(kEtherTypeArp);
        write_header(f, 0, eth);
        return;
      }
      case Step::Edit::IpOptions: {
        f.insert(f.begin() + static_cast<long>(kUdpOffset), 4, std::byte{1});
        ip.version_ihl = 0x46;
        ip.total_length.set(static_cast<std::uint16_t>(ip.total_length.get() + 4));
        write_header(f, kIpOffset, ip);
        fix_ipv4_checksum(f);
        reseal(f);
        return;
      }
      case Step::Edit::UdpPort:
      case Step::Edit::UdpLength:
      case Step::Edit::UdpChecksum: {
        auto udp = read_header<UdpHeader>(f, kUdpOffset);
        if (e == Step::Edit::UdpPort) udp.dst_port.set(kRoceV2Port + 1);
        if (e == Step::Edit::UdpLength) udp.length.set(static_cast<std::uint16_t>(udp.length.get() - 4));
        if (e == Step::Edit::UdpChecksum) udp.checksum.set(0x5A5A);
        write_header(f, kUdpOffset, udp);
        break;
      }
      case Step::Edit::PadCnt: bth.flags = static_cast<std::uint8_t>(bth.flags | 1u << Bth::kPadCntShift); break;
      case Step::Edit::TVer: bth.flags = static_cast<std::uint8_t>(bth.flags | 1u); break;
      case Step::Edit::IpLength: ip.total_length.set(static_cast<std::uint16_t>(ip.total_length.get() + 4)); break;
      case Step::Edit::Cut: f.pop_back(); return;
      case Step::Edit::EthernetPadding: f.insert(f.end(), 6, std::byte{0}); return;
      case Step::Edit::Ttl: --ip.ttl; break;
      case Step::Edit::Dscp: ip.tos = static_cast<std::uint8_t>(ip.tos ^ 0x20); break;
      case Step::Edit::SrcMac: f[6 + 5] ^= std::byte{0x10}; return;
      case Step::Edit::WriteImm: bth.opcode = raw(Opcode::RcWriteOnlyImm); break;
    }
    write_header(f, kIpOffset, ip);
    if (e == Step::Edit::DestIp || e == Step::Edit::IpLength || e == Step::Edit::Ttl || e == Step::Edit::Dscp) fix_ipv4_checksum(f);
    write_header(f, kBthOffset, bth);
    reseal(f);
  }

  const std::vector<std::byte>& memory(unsigned region) const { return mem_[region]; }
  std::uint64_t icrc_drops() const { return engine_->drops(rdma::EngineDrop::IcrcBad); }

  // The WRITE ONLYs the run's template matched and the run took (parse_frame never read them).
  std::uint64_t matched() const { return engine_->received() - engine_->parsed() - engine_->flow_matched(); }
  // The frames a QP's flow template matched instead (section 87: WRITE ONLYs before a run's template).
  std::uint64_t flow_matched() const { return engine_->flow_matched(); }

  std::uint64_t run_writes() const {
    return eps_[0].qp->responder().run_writes() + eps_[1].qp->responder().run_writes();
  }

 private:
  Mode mode_;
  rdma::MrTable mrs_{3};  // three slots: a registration after a deregistration takes the freed one
  std::unique_ptr<rdma::Engine> engine_;
  std::vector<Endpoint> eps_;
  std::vector<std::unique_ptr<RawPeer>> peers_;
  std::vector<std::byte> mem_[kRegions];
  std::uint32_t keys_[kRegions] = {};
  std::vector<std::vector<std::byte>> pending_;  // Mode::Frames: packets not yet handed over
  std::uint64_t left_to_caller_ = 0;
};

// Plays `steps` in the three modes and compares; `runs_at_least`: WRITEs the burst must have put
// on the run's path (the comparison would prove nothing if none took it). Returns how many
// frames of the burst the run's template matched (receive_frames' the same).
std::uint64_t expect_as_frame_by_frame(const std::vector<Step>& steps, std::uint64_t runs_at_least, ibv_mtu mtu = IBV_MTU_1024) {
  World ref(Mode::Reference, mtu), burst(Mode::Burst, mtu), frames(Mode::Frames, mtu), single(Mode::FrameByFrame, mtu);
  const std::vector<Observed> want_checks = ref.play(steps);
  const std::vector<Observed> burst_checks = burst.play(steps);
  const std::vector<Observed> frames_checks = frames.play(steps);
  const std::vector<Observed> single_checks = single.play(steps);
  EXPECT_EQ(burst_checks.size(), want_checks.size());
  EXPECT_EQ(frames_checks.size(), want_checks.size());
  if (burst_checks.size() != want_checks.size() || frames_checks.size() != want_checks.size()) return 0;
  for (std::size_t i = 0; i < want_checks.size(); ++i) {
    EXPECT_EQ(burst_checks[i].sent, want_checks[i].sent) << "sent frames by check " << i;
    EXPECT_EQ(burst_checks[i].counters, want_checks[i].counters) << "counters at check " << i;
    EXPECT_EQ(burst_checks[i], want_checks[i]) << "check " << i;
    EXPECT_EQ(frames_checks[i], want_checks[i]) << "check " << i << ", handed over by receive_frames";
    EXPECT_EQ(single_checks[i], want_checks[i]) << "check " << i << ", runs on, frame by frame";
  }
  EXPECT_EQ(ref.run_writes(), 0u);
  EXPECT_GE(burst.run_writes(), runs_at_least);
  EXPECT_EQ(frames.run_writes(), burst.run_writes()) << "receive_frames takes what receive() takes";
  const Observed want = ref.observe();
  const Observed got_burst = burst.observe(), got_single = single.observe();
  EXPECT_FALSE(want.sent.empty()) << "the scenario answers something";
  EXPECT_EQ(got_burst.sent, want.sent) << "sent frames, in one burst";
  EXPECT_EQ(got_burst.counters, want.counters);
  EXPECT_EQ(got_burst.states, want.states);
  EXPECT_EQ(got_burst.epsn, want.epsn);
  EXPECT_EQ(got_burst.msn, want.msn);
  EXPECT_EQ(got_burst.memory, want.memory);
  EXPECT_EQ(got_burst.drops, want.drops);
  EXPECT_EQ(got_burst.completions, want.completions);
  EXPECT_EQ(got_single, want) << "runs on, frame by frame";
  EXPECT_EQ(frames.observe(), want) << "handed over by receive_frames";
  std::size_t not_ipv4 = 0;
  for (const Step& s : steps) not_ipv4 += s.kind == Step::Kind::Packet && s.edit == Step::Edit::NotIpv4;
  EXPECT_EQ(frames.left_to_caller(), not_ipv4) << "receive_frames leaves the frames that are not IPv4, and only those";
  EXPECT_EQ(ref.matched(), 0u) << "no run, no template";
  EXPECT_EQ(single.matched(), 0u) << "no burst, no run";
  EXPECT_EQ(frames.matched(), burst.matched());
  EXPECT_LE(burst.matched(), burst.run_writes());
  return burst.matched();
}

TEST(ResponderRun, RkeyChangesMidRun) {
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), only(psn(2), 1, 0), only(psn(3), 1, 4032),
                            only(psn(4), 0, 128), only(psn(5), 1, 64)},
                           6);
}

TEST(ResponderRun, AnOutOfBoundsWriteAfterACachedRegionIsRefused) {
  // The region found valid for the first WRITE does not carry the second one past its end: an
  // R_Key violation (a fatal NAK; the QP enters ERR and drops the rest).
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, kRegionBytes - 32), only(psn(2), 0, 64)}, 1);
}

TEST(ResponderRun, AnotherKeyAfterACachedRegionIsCheckedWhole) {
  Step stale = only(psn(1), 0, 64);
  stale.key_xor = 1;  // the same slot, another generation: not the cached region's key
  expect_as_frame_by_frame({only(psn(0), 0, 0), stale, only(psn(2), 0, 128)}, 1);
}

TEST(ResponderRun, ARegionDeregisteredMidRunIsNotWritten) {
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), change(Step::Kind::Deregister, 0), only(psn(2), 0, 128),
                            only(psn(3), 0, 192)},
                           2);
}

TEST(ResponderRun, ARegionInvalidatedMidRunIsNotWritten) {
  expect_as_frame_by_frame({only(psn(0), 0, 0), change(Step::Kind::Invalidate, 0), only(psn(1), 0, 64)}, 1);
}

TEST(ResponderRun, ARegionRegisteredAgainInItsSlotMidRunIsNotWrittenUnderTheOldKey) {
  // Region 0's slot holds other memory at the same address under the next generation of its
  // key: a WRITE naming the old key is an R_Key violation (a fatal NAK), not a write to either.
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), change(Step::Kind::Deregister, 0),
                            change(Step::Kind::RegisterAgain, 3), only(psn(2), 0, 128), only(psn(3), 0, 192)},
                           2);
}

TEST(ResponderRun, TheNewRegionInARegisteredAgainSlotIsWrittenUnderItsOwnKey) {
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), change(Step::Kind::Deregister, 0),
                            change(Step::Kind::RegisterAgain, 3), only(psn(2), 3, 128), only(psn(3), 3, 192), check(),
                            only(psn(4), 3, 256), only(psn(5), 0, 320)},
                           5);
}

TEST(ResponderRun, AnotherQpsRegionIsRefusedAfterThisQpCachedIt) {
  // QP 1 names region 0 (QP 0's protection domain) right after QP 0's run used it; then its own.
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), only(psn(0), 0, 128, 1), only(psn(2), 0, 192),
                            only(psn(1), 2, 0, 1)},
                           2);
}

TEST(ResponderRun, APsnGapMidRunNaksOnceAndTheResendContinues) {
  // A gap (NAK sequence error, then silence), a duplicate (answered with an ACK), the resend.
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), only(psn(3), 0, 192), only(psn(4), 0, 256),
                            only(psn(1), 0, 64), only(psn(2), 0, 128), only(psn(3), 0, 192), only(psn(4), 0, 256)},
                           5);
}

TEST(ResponderRun, AQpErrorMidRunDropsTheRest) {
  Step bad = only(psn(2), 0, 128);
  bad.payload = 32;  // an ONLY carrying less than its RETH length: a length error, fatal on RC
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), bad, only(psn(3), 0, 192), only(psn(2), 0, 128)}, 2);
}

TEST(ResponderRun, MultiPacketWritesAndTheirSequenceErrors) {
  // At a 256 B MTU: FIRST, MIDDLE, LAST in sequence; a MIDDLE with no FIRST (fatal) on the
  // second QP; a LAST carrying more than the rest of its WRITE.
  const std::vector<Step> good = {packet(Opcode::RcWriteFirst, psn(0), 256, 0, 0, 700), packet(Opcode::RcWriteMiddle, psn(1), 256),
                                  packet(Opcode::RcWriteLast, psn(2), 188), packet(Opcode::RcWriteFirst, psn(3), 256, 1, 256, 512)};
  std::vector<Step> steps = good;
  steps.push_back(packet(Opcode::RcWriteLast, psn(4), 200));  // 256 left, a LAST must carry them all
  Step orphan = packet(Opcode::RcWriteMiddle, psn(0), 256);
  orphan.qp = 1;
  steps.push_back(orphan);
  expect_as_frame_by_frame(steps, 4, IBV_MTU_256);
}

TEST(ResponderRun, AFirstWhileAWriteIsOpenIsRefused) {
  // The open WRITE never got its LAST: a new FIRST is out of sequence, whatever its own RETH says.
  expect_as_frame_by_frame({packet(Opcode::RcWriteFirst, psn(0), 256, 0, 0, 512), packet(Opcode::RcWriteFirst, psn(1), 256, 0, 1024, 512),
                            packet(Opcode::RcWriteLast, psn(2), 256)},
                           1, IBV_MTU_256);
}

TEST(ResponderRun, AWriteOnlyMidRunIsCheckedAndAcknowledgedAsByTheWalk) {
  // WRITE ONLY has a lean path of its own mid-run (take_run_write_only). The run's first frame
  // asks no ACK, so the next one's is the run's first and goes to the full path; an empty
  // WRITE ONLY; then one whose payload is not its RETH length (fatal on RC) ends the run.
  Step quiet = only(psn(0), 0, 0);
  quiet.ack_req = false;
  Step empty = only(psn(2), 0, 128);
  empty.payload = 0;
  empty.dma_length = 0;
  Step quiet_empty = empty;
  quiet_empty.psn = psn(3);
  quiet_empty.ack_req = false;
  Step short_only = only(psn(5), 0, 256);
  short_only.payload = 32;
  short_only.dma_length = 64;
  expect_as_frame_by_frame({quiet, only(psn(1), 0, 64), empty, quiet_empty, only(psn(4), 0, 192), short_only}, 4);
  // At a 256 B MTU: a WRITE ONLY while a FIRST is open (out of sequence), and one over the path
  // MTU, each after WRITE ONLYs the run took.
  expect_as_frame_by_frame({only(psn(0), 0, 0), packet(Opcode::RcWriteFirst, psn(1), 256, 0, 64, 512), only(psn(2), 0, 1024)}, 1,
                           IBV_MTU_256);
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), packet(Opcode::RcWriteOnly, psn(2), 300, 0, 128)}, 2,
                           IBV_MTU_256);
}

TEST(ResponderRun, PacketsTheParserDefersTakeTheWalkInTheSameRun) {
  // 1 KiB packets have their ICRC settled by the walk; 64 B ones around them take the run.
  expect_as_frame_by_frame({only(psn(0), 0, 0), packet(Opcode::RcWriteOnly, psn(1), 1024, 0, 1024), only(psn(2), 0, 64),
                            packet(Opcode::RcWriteFirst, psn(3), 1024, 1, 0, 2048), packet(Opcode::RcWriteLast, psn(4), 1024),
                            only(psn(5), 1, 3072)},
                           3);
}

Step corrupted(Step s, int at) {
  s.corrupt = at;
  return s;
}

Step edited(Step s, Step::Edit e) {
  s.edit = e;
  return s;
}

TEST(ResponderRun, FramesTheEnginesStraightTestMustNotPassAreDroppedOrTakenAsByTheWalk) {
  // Engine::straight lets a WRITE ONLY that continues the run go to the run with one compare of
  // its BTH and a few of its IP header; every frame below sits mid-run after WRITE ONLYs it took,
  // and each must be counted (a drop, a NAK, a CE mark) as the walk counts it: a bad ICRC, a bad
  // IPv4 checksum, another destination address, a QPN no QP has, a P_Key not ours, a CE mark;
  // and taken as by the walk: a limited member's P_Key (accepted, other bytes), FECN, SE set.
  Step ce = only(psn(3), 0, 192);
  ce.ecn = Ecn::Ce;
  Step foreign = only(psn(4), 0, 256);
  foreign.pkey = 0x1234;
  Step limited = only(psn(4), 0, 256);
  limited.pkey = 0x7FFF;
  const Step after_limited = only(psn(5), 0, 320);  // the full member's P_Key again
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), corrupted(only(psn(2), 0, 128), 5),
                            edited(only(psn(2), 0, 128), Step::Edit::IpChecksum), edited(only(psn(2), 0, 128), Step::Edit::DestIp),
                            edited(only(psn(2), 0, 128), Step::Edit::UnknownQp), only(psn(2), 0, 128), ce, foreign, limited,
                            after_limited, edited(only(psn(6), 0, 384), Step::Edit::Fecn), edited(only(psn(7), 0, 448), Step::Edit::Se),
                            only(psn(8), 0, 512), check(), only(psn(9), 0, 576), corrupted(only(psn(10), 0, 640), 0),
                            only(psn(10), 0, 640)},
                           8);
}

TEST(ResponderRun, FramesTheRunsTemplateMustNotMatchAreParsedAndTakenOrDroppedAsByTheWalk) {
  // The run's WRITE ONLYs are matched against the template of the run's flow (Engine::
  // receive_inline) and parsed only when they do not match: each edit below sits between WRITE
  // ONLYs the template matches and is followed by the same PSN unedited (a duplicate where the
  // edited frame was taken) and the next; the dropped ones (IPv4 options, UDP port, TVer, IP and
  // UDP lengths, a cut frame, a bad IPv4 checksum or ICRC, another address or QPN) must be counted,
  // the ones the template holds other bytes of (TTL, DSCP, source MAC, FECN) taken after a parse,
  // and those it leaves to vary (Ethernet padding, UDP checksum, SE) matched; the last two edits
  // (PadCnt, the opcode with immediate: lengths the RETH does not state) are NAKed.
  using E = Step::Edit;
  std::vector<Step> steps = {only(psn(0), 0, 0), only(psn(1), 0, 64), only(psn(2), 0, 128)};
  std::int32_t n = 3;
  const auto next = [&](E e) {
    const std::uint64_t at = 64 * static_cast<std::uint64_t>(n % 60);
    steps.push_back(e == E::None ? corrupted(only(psn(n), 0, at), 9) : edited(only(psn(n), 0, at), e));
    steps.push_back(only(psn(n), 0, at));
    steps.push_back(only(psn(n + 1), 0, at + 64));
    steps.push_back(only(psn(n + 2), 0, at + 128));
    n += 3;
  };
  for (const E e : {E::IpOptions, E::UdpPort, E::TVer, E::IpLength, E::UdpLength, E::Cut, E::EthernetPadding, E::Ttl, E::Dscp,
                    E::SrcMac, E::UdpChecksum, E::IpChecksum, E::DestIp, E::UnknownQp, E::Fecn, E::Se, E::None})
    next(e);
  steps.push_back(check());
  next(E::WriteImm);
  const std::uint64_t matched = expect_as_frame_by_frame(steps, 40);
  // Of the 17 rounds before the check, two WRITE ONLYs each at least (the round's last two, once
  // the round's first unedited frame set the template again), and the three edits it matches.
  EXPECT_GE(matched, 2u * 17u + 3u);
  // PadCnt (the QP goes to error after its NAK: a scenario of its own).
  EXPECT_GE(expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), only(psn(2), 0, 128), edited(only(psn(3), 0, 192), E::PadCnt),
                                      only(psn(3), 0, 192), only(psn(4), 0, 256)},
                                     1),
            1u);
}

TEST(ResponderRun, FramesThatAreNotIpv4MidBurstAreLeftToTheCallerAndTheRestTaken) {
  // Engine::receive_frames stops at a frame that is not IPv4 over Ethernet (a worker's ARP or
  // NDP frame, or IPv6 for receive()); handed over again after it, the run goes on: a lone one,
  // two in a row, one first and one last, among WRITE ONLYs the run takes and frames it drops.
  const auto not_ipv4 = [](std::int32_t i, std::uint64_t at) { return edited(only(psn(i), 0, at), Step::Edit::NotIpv4); };
  expect_as_frame_by_frame({not_ipv4(0, 0), only(psn(0), 0, 0), only(psn(1), 0, 64), not_ipv4(2, 128), only(psn(2), 0, 128),
                            only(psn(3), 0, 192), not_ipv4(4, 256), not_ipv4(4, 256), corrupted(only(psn(4), 0, 256), 3),
                            only(psn(4), 0, 256), edited(only(psn(5), 0, 320), Step::Edit::UnknownQp), only(psn(5), 0, 320),
                            not_ipv4(6, 384)},
                           4);
}

TEST(ResponderRun, AFrameTheRunMustNotTakeAmongTheBurstsFramesLeavesTheOthersPlacedExactly) {
  // One burst handed over whole (receive_frames): a duplicate, an old duplicate, a PSN ahead
  // (a NAK, then silence until the resend), a bad ICRC, a QPN no QP has, each between WRITE
  // ONLYs the run takes; every byte, ACK and counter as the walk's.
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), only(psn(2), 0, 128), only(psn(2), 0, 128),
                            only(psn(3), 0, 192), only(psn(0), 0, 0), only(psn(4), 0, 256),
                            corrupted(only(psn(5), 0, 320), 1), only(psn(5), 0, 320),
                            edited(only(psn(6), 0, 384), Step::Edit::UnknownQp), only(psn(7), 0, 448), only(psn(8), 0, 512),
                            only(psn(6), 0, 384), only(psn(7), 0, 448), only(psn(8), 0, 512), only(psn(9), 0, 576)},
                           9);
}

TEST(ResponderRun, WriteOnlysOfEveryShortLengthAreCopiedAsByTheWalk) {
  // The run's WRITE ONLY copies payloads up to 64 bytes inline (copy_short), longer ones with
  // memcpy: every length from 0 to 70 mid-run, each to its own place in region 0.
  std::vector<Step> steps = {only(psn(0), 0, 0)};
  std::uint64_t at = 64;
  for (std::uint32_t len = 0; len <= 70; ++len) {
    Step s = only(psn(static_cast<std::int32_t>(len) + 1), 0, at);
    s.payload = len;
    s.dma_length = len;
    steps.push_back(s);
    at += len + 1;
  }
  expect_as_frame_by_frame(steps, 60);
}

TEST(ResponderRun, DeferredPacketsWithAFailingIcrcAreDroppedAsByTheWalk) {
  // 1 KiB packets (ICRC deferred) on the run's path, each kind once corrupted and then resent
  // as go-back-N would: a FIRST (its RETH must not steer a byte), a MIDDLE (placed ahead; its
  // resend rewrites the bytes), a LAST corrupted in its held tail and one before it, an ONLY.
  const Step first = packet(Opcode::RcWriteFirst, psn(0), 1024, 0, 0, 3072);
  const Step middle = packet(Opcode::RcWriteMiddle, psn(1), 1024);
  const Step last = packet(Opcode::RcWriteLast, psn(2), 1024);
  const Step only_1k = packet(Opcode::RcWriteOnly, psn(3), 1024, 1, 2048);
  expect_as_frame_by_frame({corrupted(first, 0), first, corrupted(middle, 700), middle, corrupted(last, 1000),
                            corrupted(last, 3), last, check(), corrupted(only_1k, 1023), only_1k},
                           4);
}

TEST(ResponderRun, ADeferredPacketWithAFailingIcrcPlacesNothingAPollerCanSee) {
  // In one burst, runs on: a corrupted ONLY, FIRST and LAST leave their regions as they were but
  // for a LAST's bytes before its held tail (inside the open message, rewritten by the resend).
  World w(Mode::Burst, IBV_MTU_1024);
  const Step only_1k = packet(Opcode::RcWriteOnly, psn(0), 1024, 1, 0);
  const Step first = packet(Opcode::RcWriteFirst, psn(0), 1024, 0, 1024, 2048);
  const Step last = packet(Opcode::RcWriteLast, psn(1), 1024);
  w.play({corrupted(only_1k, 512), corrupted(first, 1), first, corrupted(last, 1023), check()});
  EXPECT_EQ(w.icrc_drops(), 3u);
  EXPECT_EQ(w.memory(1), std::vector<std::byte>(kRegionBytes, std::byte{0})) << "a corrupted ONLY placed nothing";
  const std::vector<std::byte>& m = w.memory(0);
  for (std::size_t i = 0; i < kRegionBytes; ++i) {
    const bool first_bytes = i >= 1024 && i < 2048;
    const bool last_ahead = i >= 2048 && i < 3072 - rdma::kHeldTailBytes;
    ASSERT_EQ(m[i], first_bytes ? std::byte{3} : last_ahead ? std::byte{4} : std::byte{0}) << "byte " << i;
  }
  EXPECT_GE(w.run_writes(), 1u);
}

TEST(ResponderRun, CountersAndAcksAreExactAfterEveryBurst) {
  // Runs of coalesced ACKs (AckDeferred, the ACK's PSN and MSN) looked at after each burst: one
  // QP alone, two QPs taking turns (each turn a run of its own), a run ended by a frame the
  // walk takes (a duplicate, answered at once), and the ACK sent between two bursts of one run
  // of the same QP.
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), only(psn(2), 0, 128), check(), only(psn(3), 0, 192),
                            only(psn(0), 2, 0, 1), only(psn(1), 2, 64, 1), only(psn(4), 0, 256), only(psn(5), 0, 320), check(),
                            only(psn(6), 0, 384), only(psn(5), 0, 320), only(psn(7), 0, 448), only(psn(8), 0, 512), check(),
                            check(), only(psn(9), 0, 576)},
                           12);
}

TEST(ResponderRun, ARegionDeregisteredBetweenBurstsIsNotWritten) {
  // The region the first burst's run used is gone before the second burst names it again.
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), check(), change(Step::Kind::Deregister, 0),
                            only(psn(2), 0, 128), only(psn(3), 0, 192)},
                           2);
}

TEST(ResponderRun, ARegionRegisteredAgainUnderItsOwnKeyBetweenBurstsIsNotWritten) {
  // The run's region, kept from one burst to the next while its key names it, is not kept once
  // its slot holds other memory under that very key (256 registrations later): the key's WRITEs
  // go to that memory, as the walk finds them.
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), check(), change(Step::Kind::Deregister, 0),
                            change(Step::Kind::RegisterUnderTheSameKey, 3), only(psn(2), 0, 128), only(psn(3), 0, 192),
                            check(), only(psn(4), 0, 256)},
                           5);
}

TEST(ResponderRun, AResponseFirstInABurstDoesNotCarryAnEarlierRunsRegionOver) {
  // QP 0 is a requester too: in the second burst its first frame is an ACK (of nothing it
  // sent: the completer ignores it), then WRITEs. The region the first burst's run kept must be
  // renewed at the QP's first frame in a burst whatever that frame is, so the WRITEs after the
  // ACK go where the walk puts them: to the other memory now under that very key.
  Step ack;
  ack.op = Opcode::RcAck;
  ack.psn = 0xFF;  // the QP's send PSN starts at 0x100
  ack.payload = 0;
  ack.ack_req = false;
  expect_as_frame_by_frame({only(psn(0), 0, 0), check(), change(Step::Kind::Deregister, 0),
                            change(Step::Kind::RegisterUnderTheSameKey, 3), ack, only(psn(1), 0, 64), only(psn(2), 0, 128)},
                           2);
}

TEST(ResponderRun, ARegionInvalidatedBetweenBurstsIsNotWritten) {
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), check(), change(Step::Kind::Invalidate, 0),
                            only(psn(2), 0, 128)},
                           2);
}

// Frames a run cannot take whole: a CE-marked WRITE, one under another partition's P_Key, a CNP.
Step ce_marked(Step s) {
  s.ecn = Ecn::Ce;
  return s;
}
Step foreign_pkey(Step s) {
  s.pkey = 0x1234;
  return s;
}
Step cnp_step() {
  Step cnp;
  cnp.op = Opcode::Cnp;
  cnp.payload = 0;
  cnp.ack_req = false;
  return cnp;
}

TEST(ResponderRun, FramesTheRunCannotTakeWholeGoTheWholeWay) {
  // Mid-run, each between WRITEs the run takes: a CE-marked WRITE (EcnCeReceived, the
  // congestion point's turn), one under another partition's P_Key (dropped, counted), a CNP, one
  // of the other QP, and the run goes on after each.
  expect_as_frame_by_frame({only(psn(0), 0, 0), only(psn(1), 0, 64), ce_marked(only(psn(2), 0, 128)), only(psn(3), 0, 192),
                            foreign_pkey(only(psn(4), 0, 256)), only(psn(4), 0, 256), cnp_step(), only(psn(5), 0, 320),
                            only(psn(0), 2, 0, 1), only(psn(6), 0, 384), only(psn(7), 0, 448)},
                           7);
}

// Each step in a burst of its own: every WRITE starts its run, as at queue depth 1 (on_request:
// begin_run, which keeps what it found out about the QP from run to run, then the run's WRITE;
// docs/perf-changes.md sections 60 and 67). The last burst is left to the final comparison,
// which wants something sent in it.
std::vector<Step> alone(const std::vector<Step>& steps) {
  std::vector<Step> out;
  for (const Step& s : steps) {
    if (!out.empty()) out.push_back(check());
    out.push_back(s);
  }
  return out;
}

TEST(ResponderRun, LoneWritesAreAcknowledgedAndPlacedAsByTheWalk) {
  // One QP, then the other, then both in turn; a multi-packet WRITE a packet a burst; a WRITE
  // without an ACK request, acknowledged by the next one's ACK.
  Step quiet = only(psn(3), 0, 192);
  quiet.ack_req = false;
  std::vector<Step> steps = {only(psn(0), 0, 0), only(psn(1), 0, 64),   only(psn(2), 1, 0),   quiet,
                             only(psn(4), 0, 256), only(psn(0), 2, 0, 1), only(psn(5), 0, 320), only(psn(1), 2, 64, 1)};
  expect_as_frame_by_frame(alone(steps), 8);
  expect_as_frame_by_frame(alone({packet(Opcode::RcWriteFirst, psn(0), 256, 0, 0, 700), packet(Opcode::RcWriteMiddle, psn(1), 256),
                                  packet(Opcode::RcWriteLast, psn(2), 188), only(psn(3), 1, 512)}),
                           4, IBV_MTU_256);
}

TEST(ResponderRun, EveryRefusalOfALoneWriteNaksAndCountsAsByTheWalk) {
  // Each alone in its burst, between lone WRITEs the run takes: a PSN gap (NAK sequence error,
  // then silence), a duplicate (answered with a prompt ACK), the resend; a CE-marked WRITE; one
  // under another P_Key; a CNP; a WRITE carrying less than its RETH length (fatal on RC).
  Step short_only = only(psn(6), 0, 384);
  short_only.payload = 32;
  expect_as_frame_by_frame(alone({only(psn(0), 0, 0), only(psn(2), 0, 128), only(psn(3), 0, 192), only(psn(0), 0, 0),
                                  only(psn(1), 0, 64), only(psn(2), 0, 128), only(psn(3), 0, 192), ce_marked(only(psn(4), 0, 256)),
                                  foreign_pkey(only(psn(5), 0, 320)), only(psn(5), 0, 320), cnp_step(), short_only}),
                           5);
}

TEST(ResponderRun, ALoneWriteUnderABadKeyOrOutOfBoundsIsRefusedAsByTheWalk) {
  // QP 1: another domain's region (a fatal NAK, the QP in ERR), then a WRITE to the QP in ERR
  // (dropped, counted). QP 0: a key of another generation (an R_Key violation); out of bounds.
  // (Each scenario ends with a frame answered to QP 0's peer, which the final comparison reads.)
  Step stale = only(psn(1), 0, 64);
  stale.key_xor = 1;
  expect_as_frame_by_frame(alone({only(psn(0), 2, 0, 1), only(psn(1), 0, 0, 1), only(psn(2), 2, 0, 1), only(psn(0), 0, 0), stale}), 2);
  expect_as_frame_by_frame(alone({only(psn(0), 0, 0), only(psn(1), 0, kRegionBytes - 32)}), 1);
}

TEST(ResponderRun, ALoneWriteAfterRemoteWriteIsRevokedIsRefused) {
  // What a run found out about the QP (remote write allowed) is kept from run to run, but not
  // past QP modify: the next lone WRITE is an invalid request (a fatal NAK), as the walk finds.
  Step revoke = change(Step::Kind::RevokeRemoteWrite, 0);
  expect_as_frame_by_frame(alone({only(psn(0), 0, 0), only(psn(1), 0, 64), revoke, only(psn(2), 0, 128)}), 2);
}

TEST(ResponderRun, WritesWithoutAckRequestsAreAcknowledgedByTheNextAck) {
  Step quiet = only(psn(1), 0, 64);
  quiet.ack_req = false;
  Step quiet2 = only(psn(2), 0, 128);
  quiet2.ack_req = false;
  expect_as_frame_by_frame({only(psn(0), 0, 0), quiet, quiet2, only(psn(3), 0, 192)}, 4);
}

}  // namespace
}  // namespace roce::test::responder_run_test
