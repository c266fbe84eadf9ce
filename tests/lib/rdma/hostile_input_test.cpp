// One test per row of docs/robustness.md: a hostile or broken frame goes into Engine::receive
// and the test checks what it gets (the NAK the IB spec prescribes, or a counted drop) and that
// no byte of host memory changed that the request had no right to change. Every registered
// region sits in one arena between guard bands; the guards are checked after every test.
#include <gtest/gtest.h>

#include <cstring>

#include "protocol/aeth.hpp"
#include "tests/support/frame_edit.hpp"
#include "tests/support/raw_peer_test.hpp"

namespace roce::test::hostile_input_test {
namespace {

using namespace roce::proto;
using namespace roce::test::frame_edit;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0xAA};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 9};
constexpr std::uint32_t kPeerQpn = 0x77;
constexpr std::uint32_t kEpsn = 0x1000;
constexpr std::uint32_t kPmtu = 1024;
constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr std::uint8_t kNakPsnSeq = 0x60;
constexpr std::uint8_t kNakInvalidRequest = 0x61;
constexpr std::uint8_t kNakRemoteAccess = 0x62;

constexpr std::size_t kGuard = 256;
constexpr std::size_t kRegionBytes = 4096;
enum Region : std::size_t { Rw, ReadOnly, NoAtomic, Recv, OtherPd, kRegions };
class HostileInput : public RawPeerTest {
 protected:
  void SetUp() override {
    RawPeerSetup s{kPeerMac, kPeerIp, kPeerQpn, kEpsn, kAll};
    s.rts = true;
    s.sq_psn = 0x500;
    s.max_rd_atomic = 4;
    bring_up(s);

    arena_.resize(kGuard + kRegions * (kRegionBytes + kGuard));
    for (std::size_t i = 0; i < arena_.size(); ++i) arena_[i] = static_cast<std::byte>(0xA5 ^ (i * 31));
    const int access[kRegions] = {kAll, IBV_ACCESS_REMOTE_READ,
                                  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
                                  IBV_ACCESS_LOCAL_WRITE, kAll};
    for (std::size_t r = 0; r < kRegions; ++r) {
      const rdma::PdHandle pd = r == OtherPd ? engine_->alloc_pd() : ep_.pd;
      auto mr = mrs_.register_region(pd, region(r), kRegionBytes, access[r]);
      ASSERT_TRUE(mr.ok()) << mr.error().message;
      mr_[r] = *mr;
    }
    before_ = arena_;
  }

  void TearDown() override {
    // Whatever a test did, nothing outside a registered region may have changed.
    for (std::size_t g = 0; g <= kRegions; ++g) {
      const std::size_t off = g * (kRegionBytes + kGuard);
      EXPECT_TRUE(std::equal(arena_.begin() + static_cast<std::ptrdiff_t>(off),
                             arena_.begin() + static_cast<std::ptrdiff_t>(off + kGuard),
                             before_.begin() + static_cast<std::ptrdiff_t>(off)))
          << "guard band " << g << " was written";
    }
  }

  std::byte* region(std::size_t r) { return arena_.data() + kGuard + r * (kRegionBytes + kGuard); }
  std::uint64_t va(std::size_t r, std::size_t off = 0) { return reinterpret_cast<std::uint64_t>(region(r) + off); }
  std::uint32_t rkey(std::size_t r) const { return mr_[r]->rkey(); }
  static std::vector<std::byte> bytes(std::size_t n, std::uint8_t v) { return std::vector<std::byte>(n, std::byte{v}); }
  static std::uint8_t syn(const Reply& r) { return r.pkt.ext.aeth.syndrome; }

  bool memory_untouched() const { return arena_ == before_; }
  std::uint64_t parse_drops() const {
    std::uint64_t n = 0;
    for (std::size_t e = 1; e < static_cast<std::size_t>(ParseError::Count); ++e)
      n += engine_->parse_drops(static_cast<ParseError>(e));
    return n;
  }

  // The one answer a request got: a NAK with `syndrome` for the request's PSN, the QP in ERR.
  void expect_fatal_nak(std::uint8_t syndrome, std::uint32_t psn = kEpsn) {
    const auto out = peer_->collect();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].pkt.opcode(), raw(Opcode::RcAck));
    EXPECT_EQ(syn(out[0]), syndrome);
    EXPECT_EQ(out[0].pkt.psn(), psn);
    EXPECT_EQ(ep_.qp->state(), rdma::QpState::Err);
  }

  std::vector<std::byte> valid_write(std::size_t n = 64) {
    return peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), static_cast<std::uint32_t>(n)), bytes(n, 0xEE));
  }

  std::vector<std::byte> arena_;
  std::vector<std::byte> before_;
  const rdma::MemoryRegion* mr_[kRegions] = {};
};

// ---- frames that never reach a QP --------------------------------------------------------

TEST_F(HostileInput, FrameCutAtEveryHeaderBoundaryIsATruncatedDrop) {
  const auto whole = valid_write(64);
  const std::size_t reth_end = kBthOffset + sizeof(Bth) + sizeof(Reth);
  const std::size_t cuts[] = {0, 6, kEthBytes - 1, kEthBytes, kUdpOffset - 1, kUdpOffset, kBthOffset - 1, kBthOffset,
                              kBthOffset + 4, kBthOffset + sizeof(Bth), reth_end - 1, reth_end, reth_end + 32,
                              whole.size() - 4, whole.size() - 1};
  for (const std::size_t cut : cuts) {
    const std::vector<std::byte> f(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut));
    peer_->send(f);
  }
  EXPECT_EQ(engine_->parse_drops(ParseError::Truncated), std::size(cuts));
  EXPECT_EQ(parse_drops(), std::size(cuts));
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
  EXPECT_EQ(count(rdma::Counter::RcvdPkts), 0u);
}

TEST_F(HostileInput, BadIcrcIsACountedDrop) {
  auto f = valid_write();
  f[kBthOffset + sizeof(Bth) + sizeof(Reth) + 3] ^= std::byte{0x10};  // one payload bit
  peer_->send(f);
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::IcrcBad), 1u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, IpTotalLengthDisagreeingWithTheFrameIsADrop) {
  for (const int delta : {-8, +8}) {
    auto f = valid_write();
    auto ip = read_header<Ipv4Header>(f, kIpOffset);
    ip.total_length.set(static_cast<std::uint16_t>(ip.total_length.get() + delta));
    write_header(f, kIpOffset, ip);
    fix_ipv4_checksum(f);
    peer_->send(f);
  }
  // Longer than the frame, or too short for the UDP datagram in it.
  EXPECT_EQ(engine_->parse_drops(ParseError::LengthMismatch), 2u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, UdpLengthDisagreeingWithIpIsALengthMismatchDrop) {
  for (const int delta : {-4, +4}) {
    auto f = valid_write();
    auto udp = read_header<UdpHeader>(f, kUdpOffset);
    udp.length.set(static_cast<std::uint16_t>(udp.length.get() + delta));
    write_header(f, kUdpOffset, udp);
    reseal(f);
    peer_->send(f);
  }
  EXPECT_EQ(engine_->parse_drops(ParseError::LengthMismatch), 2u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, BadIpv4HeaderChecksumIsACountedDrop) {
  // The ICRC masks the IPv4 checksum, so only the checksum itself can catch this.
  auto f = valid_write();
  auto ip = read_header<Ipv4Header>(f, kIpOffset);
  ip.checksum.set(static_cast<std::uint16_t>(ip.checksum.get() ^ 0x0101));
  write_header(f, kIpOffset, ip);
  peer_->send(f);
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::Ipv4ChecksumBad), 1u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, NonZeroTverIsADrop) {
  peer_->spec().bth.flags = static_cast<std::uint8_t>(peer_->spec().bth.flags | 0x1);
  peer_->send(valid_write());
  EXPECT_EQ(engine_->parse_drops(ParseError::BadTver), 1u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, WrongPkeyIsACountedDrop) {
  peer_->spec().bth.pkey.set(0x1234);
  peer_->send(valid_write());
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::PkeyMismatch), 1u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Rts);
  // A limited member of our partition may still talk to us (we are a full member).
  peer_->spec().bth.pkey.set(0x7FFF);
  peer_->send(valid_write());
  const auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(Syndrome{syn(out[0])}.is_ack());
}

TEST_F(HostileInput, FrameForAnotherIpAddressIsACountedDrop) {
  peer_->spec().ipv4.dst = Ipv4Addr{10, 0, 0, 2};
  peer_->send(valid_write());
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::NotForUs), 1u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, UnknownQpnIsACountedDrop) {
  RawPeer stranger(*engine_, kPeerMac, kPeerIp, kPeerQpn, 0xABCDE);
  stranger.send(stranger.frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), 8), bytes(8, 1)));
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::UnknownQp), 1u);
  EXPECT_TRUE(stranger.collect().empty());
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, DestroyedQpnIsACountedDrop) {
  QpOptions o;
  Endpoint gone = make_endpoint(*engine_, o, ep_.pd);
  to_rtr(*engine_, gone.qp, RawPeerPath{kPeerIp, kPeerQpn, kEpsn, kAll});
  const std::uint32_t qpn = gone.qp->qpn();
  ASSERT_TRUE(engine_->destroy_qp(gone.qp).ok());
  RawPeer late(*engine_, kPeerMac, kPeerIp, kPeerQpn, qpn);
  late.send(late.frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), 8), bytes(8, 1)));
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::UnknownQp), 1u);
  EXPECT_TRUE(late.collect().empty());
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, OpcodeOfAnotherTransportForAnRcQpIsAWrongTransportDrop) {
  peer_->send(peer_->frame(Opcode::UcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), 8), bytes(8, 1)));
  ExtHeaders deth;
  deth.deth.qkey.set(0x11111111);
  peer_->send(peer_->frame(Opcode::UdSendOnly, kEpsn, deth, bytes(8, 1)));
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::WrongTransport), 2u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Rts);
}

TEST_F(HostileInput, Ipv4HeaderWithOptionsIsCountedAsSuchNotAsCorrupted) {
  // Four NOP options after the 20-byte header: IHL 6.
  auto f = valid_write();
  f.insert(f.begin() + static_cast<std::ptrdiff_t>(kUdpOffset), 4, std::byte{0x01});
  auto ip = read_header<Ipv4Header>(f, kIpOffset);
  ip.version_ihl = 0x46;
  ip.total_length.set(static_cast<std::uint16_t>(f.size() - kIpOffset));
  write_header(f, kIpOffset, ip);
  fix_ipv4_checksum(f);
  peer_->send(f);
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::Ipv4Options), 1u);
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::IcrcBad), 0u);
  EXPECT_EQ(parse_drops(), 0u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, ReadRequestCarryingPayloadIsACountedDrop) {
  peer_->send(with_tail(peer_->frame(Opcode::RcReadRequest, kEpsn, reth(va(Rw), rkey(Rw), 8)), 8));
  EXPECT_EQ(engine_->parse_drops(ParseError::PayloadNotAllowed), 1u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Rts);
}

TEST_F(HostileInput, AtomicWithAShortOrLongAtomicEthIsACountedDrop) {
  const auto atomic = peer_->frame(Opcode::RcFetchAdd, kEpsn, atomic_eth(va(Rw), rkey(Rw), 1, 0));
  peer_->send(with_tail(atomic, -8));
  peer_->send(with_tail(atomic, 8));
  EXPECT_EQ(engine_->parse_drops(ParseError::ShortForOpcode), 1u);
  EXPECT_EQ(engine_->parse_drops(ParseError::PayloadNotAllowed), 1u);
  EXPECT_EQ(parse_drops(), 2u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, WriteWithImmediateMissingItsImmDtIsADropOrInvalidRequest) {
  ibv_sge g = sge(region(Recv), 64, mr_[Recv]);
  ASSERT_EQ(post_recv(ep_, 9, &g, 1), 0);
  // Zero-length: the datagram is shorter than RETH + ImmDt.
  peer_->send(with_opcode(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), 0)), Opcode::RcWriteOnlyImm));
  EXPECT_EQ(engine_->parse_drops(ParseError::ShortForOpcode), 1u);
  EXPECT_TRUE(peer_->collect().empty());
  // With payload, its first four bytes are read as ImmDt and the rest disagrees with the RETH.
  peer_->send(with_opcode(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), 64), bytes(64, 1)),
                          Opcode::RcWriteOnlyImm));
  expect_fatal_nak(kNakInvalidRequest);
  EXPECT_EQ(count(rdma::Counter::InvalidRequests), 1u);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, RoceV1FrameIsACountedDrop) {
  auto f = valid_write();
  auto eth = read_header<EthernetHeader>(f, 0);
  eth.ether_type.set(kEtherTypeRoceV1);
  write_header(f, 0, eth);
  peer_->send(f);
  EXPECT_EQ(engine_->parse_drops(ParseError::RoceV1), 1u);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, NonRoceFramesAreCountedDrops) {
  auto arp = valid_write();
  auto eth = read_header<EthernetHeader>(arp, 0);
  eth.ether_type.set(kEtherTypeArp);
  write_header(arp, 0, eth);
  peer_->send(arp);

  auto tcp = valid_write();
  auto ip = read_header<Ipv4Header>(tcp, kIpOffset);
  ip.protocol = 6;
  write_header(tcp, kIpOffset, ip);
  fix_ipv4_checksum(tcp);
  peer_->send(tcp);

  auto other_port = valid_write();
  auto udp = read_header<UdpHeader>(other_port, kUdpOffset);
  udp.dst_port.set(4792);
  write_header(other_port, kUdpOffset, udp);
  peer_->send(other_port);

  auto fragment = valid_write();
  ip = read_header<Ipv4Header>(fragment, kIpOffset);
  ip.flags_fragment.set(0x2000);  // more fragments
  write_header(fragment, kIpOffset, ip);
  fix_ipv4_checksum(fragment);
  peer_->send(fragment);

  EXPECT_EQ(engine_->parse_drops(ParseError::NotIp), 1u);
  EXPECT_EQ(engine_->parse_drops(ParseError::NotUdp), 1u);
  EXPECT_EQ(engine_->parse_drops(ParseError::NotRoceV2Port), 1u);
  EXPECT_EQ(engine_->parse_drops(ParseError::IpFragment), 1u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, InconsistentPadCountIsADrop) {
  // A READ request carries no payload, so any pad count is a lie.
  peer_->spec().validate = false;
  auto f = peer_->frame(Opcode::RcReadRequest, kEpsn, reth(va(Rw), rkey(Rw), 8));
  auto bth = read_header<Bth>(f, kBthOffset);
  bth.set_pad_count(3);
  write_header(f, kBthOffset, bth);
  reseal(f);
  peer_->send(f);
  EXPECT_EQ(engine_->parse_drops(ParseError::PadCntInconsistent), 1u);
  EXPECT_TRUE(peer_->collect().empty());
}

TEST_F(HostileInput, PayloadAboveTheLargestMtuIsADrop) {
  peer_->spec().validate = false;
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), 4100), bytes(4100, 1)));
  EXPECT_EQ(engine_->parse_drops(ParseError::PayloadAbovePmtu), 1u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, CnpForAnUnknownQpIsACountedDrop) {
  RawPeer stranger(*engine_, kPeerMac, kPeerIp, kPeerQpn, 0xABCDE);
  stranger.send(stranger.frame(Opcode::Cnp, 0, {}, {}, false));
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::UnknownQp), 1u);
  EXPECT_TRUE(stranger.collect().empty());
}

TEST_F(HostileInput, CnpForAQpWithoutDcqcnIsCountedAndIgnored) {
  peer_->send(peer_->frame(Opcode::Cnp, 0, {}, {}, false));
  EXPECT_EQ(count(rdma::Counter::CnpIgnored), 1u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Rts);
}

// ---- QP state and PSN --------------------------------------------------------------------

TEST_F(HostileInput, RequestToAQpInInitIsABadStateDrop) {
  QpOptions o;
  Endpoint fresh = make_endpoint(*engine_, o, ep_.pd);
  to_init(*engine_, fresh.qp, kAll);
  RawPeer p(*engine_, kPeerMac, kPeerIp, kPeerQpn, fresh.qp->qpn());
  p.send(p.frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), 8), bytes(8, 1)));
  EXPECT_EQ(fresh.qp->counters().get(rdma::Counter::BadStateDrops), 1u);
  EXPECT_TRUE(p.collect().empty());
  EXPECT_TRUE(memory_untouched());
  EXPECT_EQ(fresh.qp->state(), rdma::QpState::Init);
}

TEST_F(HostileInput, ResponseToAQpThatSendsNoRequestsIsABadStateDrop) {
  QpOptions o;
  Endpoint rtr = make_endpoint(*engine_, o, ep_.pd);
  to_rtr(*engine_, rtr.qp, RawPeerPath{kPeerIp, kPeerQpn, kEpsn, kAll});
  RawPeer p(*engine_, kPeerMac, kPeerIp, kPeerQpn, rtr.qp->qpn());
  ExtHeaders ext;
  ext.aeth = Aeth{Syndrome::ack().raw, Be24::of(1)};
  p.send(p.frame(Opcode::RcReadResponseOnly, 0x500, ext, bytes(8, 1), false));
  EXPECT_EQ(rtr.qp->counters().get(rdma::Counter::BadStateDrops), 1u);
  EXPECT_TRUE(p.collect().empty());
  EXPECT_EQ(rtr.qp->state(), rdma::QpState::Rtr);
}

TEST_F(HostileInput, UnsolicitedResponseIsAGhostAndChangesNothing) {
  ExtHeaders ext;
  ext.aeth = Aeth{Syndrome::ack().raw, Be24::of(1)};
  peer_->send(peer_->frame(Opcode::RcReadResponseOnly, 0x500, ext, bytes(8, 1), false));
  peer_->send(peer_->frame(Opcode::RcAck, 0x400, ext, {}, false));  // far behind the window
  EXPECT_EQ(count(rdma::Counter::GhostResponses), 2u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Rts);
  EXPECT_TRUE(drain(ep_).empty());
}

TEST_F(HostileInput, UnsolicitedAckAtomicAckReadResponseAndNakAreCountedAndChangeNothing) {
  ExtHeaders ack;
  ack.aeth = Aeth{Syndrome::ack().raw, Be24::of(1)};
  ExtHeaders nak;
  nak.aeth = Aeth{Syndrome::nak(NakCode::RemoteAccessError).raw, Be24::of(1)};
  const std::uint32_t before_first = 0x4FF;  // inside the window, but nothing is outstanding
  peer_->send(peer_->frame(Opcode::RcAck, before_first, ack, {}, false));
  peer_->send(peer_->frame(Opcode::RcAtomicAck, before_first, ack, {}, false));
  peer_->send(peer_->frame(Opcode::RcReadResponseFirst, before_first, ack, bytes(kPmtu, 1), false));
  peer_->send(peer_->frame(Opcode::RcAck, before_first, nak, {}, false));
  EXPECT_EQ(count(rdma::Counter::UnsolicitedResponses), 4u);
  EXPECT_EQ(count(rdma::Counter::GhostResponses), 0u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Rts);  // the NAK used to fail the oldest WQE, and the QP
  EXPECT_TRUE(drain(ep_).empty());
  EXPECT_TRUE(memory_untouched());

  // A NAK for a PSN already acknowledged names nothing outstanding either.
  ibv_sge g = sge(region(Rw), 8, mr_[Rw]);
  ASSERT_EQ(post(ep_, IBV_WR_RDMA_WRITE, 1, &g, 1, 0x10000, 0x1234), 0);
  ASSERT_EQ(peer_->collect().size(), 1u);
  peer_->send(peer_->frame(Opcode::RcAck, 0x500, ack, {}, false));
  ASSERT_EQ(post(ep_, IBV_WR_RDMA_WRITE, 2, &g, 1, 0x10000, 0x1234), 0);
  ASSERT_EQ(peer_->collect().size(), 1u);
  peer_->send(peer_->frame(Opcode::RcAck, 0x500, nak, {}, false));
  EXPECT_EQ(count(rdma::Counter::UnsolicitedResponses), 5u);
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Rts);
  peer_->send(peer_->frame(Opcode::RcAck, 0x501, ack, {}, false));
  const auto wcs = drain(ep_);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wcs[1].status, IBV_WC_SUCCESS) << describe(wcs[1]);
}

TEST_F(HostileInput, RequestToAQpInErrorIsABadStateDrop) {
  peer_->send(peer_->frame(Opcode::RcWriteMiddle, kEpsn, {}, bytes(kPmtu, 1)));
  expect_fatal_nak(kNakInvalidRequest);
  before_ = arena_;
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), 8), bytes(8, 1)));
  EXPECT_EQ(count(rdma::Counter::BadStateDrops), 1u);
  EXPECT_TRUE(peer_->collect().empty());
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, PsnAheadGetsOneSequenceNakThenSilence) {
  for (std::uint32_t i = 1; i <= 5; ++i)
    peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn + i * 100, reth(va(Rw), rkey(Rw), 8), bytes(8, 1)));
  const auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(syn(out[0]), kNakPsnSeq);
  EXPECT_EQ(out[0].pkt.psn(), kEpsn);
  EXPECT_EQ(count(rdma::Counter::OutOfSeqRequest), 5u);
  EXPECT_TRUE(memory_untouched());
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Rts);  // class B: the QP carries on
}

TEST_F(HostileInput, PsnFarBehindIsADuplicateAcknowledgedNotExecuted) {
  const std::uint32_t far = (kEpsn - (1u << 22)) & 0xFFFFFF;
  peer_->send(peer_->frame(Opcode::RcWriteOnly, far, reth(va(Rw), rkey(Rw), 8), bytes(8, 1)));
  const auto out = peer_->collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(Syndrome{syn(out[0])}.is_ack());
  EXPECT_EQ(out[0].pkt.psn(), (kEpsn - 1) & 0xFFFFFF);
  EXPECT_EQ(count(rdma::Counter::DuplicateRequest), 1u);
  EXPECT_TRUE(memory_untouched());
}

// ---- opcode sequence and payload sizes (NAK invalid request, class C) ---------------------

TEST_F(HostileInput, MiddleWithoutFirstIsInvalidRequest) {
  peer_->send(peer_->frame(Opcode::RcSendMiddle, kEpsn, {}, bytes(kPmtu, 1)));
  expect_fatal_nak(kNakInvalidRequest);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, LastAfterOnlyIsInvalidRequest) {
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), 8), bytes(8, 2), false));
  peer_->send(peer_->frame(Opcode::RcWriteLast, kEpsn + 1, {}, bytes(8, 3)));
  expect_fatal_nak(kNakInvalidRequest, kEpsn + 1);
  EXPECT_EQ(count(rdma::Counter::OpcodeSequenceErrors), 1u);
  EXPECT_EQ(region(Rw)[0], std::byte{2});  // the ONLY landed, the LAST did not
  EXPECT_TRUE(std::equal(arena_.begin() + kGuard + 8, arena_.end(), before_.begin() + kGuard + 8));
}

TEST_F(HostileInput, FirstWhileAMessageIsOpenIsInvalidRequest) {
  peer_->send(peer_->frame(Opcode::RcWriteFirst, kEpsn, reth(va(Rw), rkey(Rw), 2 * kPmtu), bytes(kPmtu, 2), false));
  peer_->send(peer_->frame(Opcode::RcWriteFirst, kEpsn + 1, reth(va(Rw, kPmtu), rkey(Rw), 2 * kPmtu), bytes(kPmtu, 3)));
  expect_fatal_nak(kNakInvalidRequest, kEpsn + 1);
  EXPECT_TRUE(std::equal(arena_.begin() + kGuard + kPmtu, arena_.end(), before_.begin() + kGuard + kPmtu));
}

TEST_F(HostileInput, PayloadAboveThePathMtuIsInvalidRequest) {
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), 2048), bytes(2048, 1)));
  expect_fatal_nak(kNakInvalidRequest);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, FirstOrMiddleNotPmtuSizedIsInvalidRequest) {
  // 512 is an IBA MTU; the QP's path MTU is 1024.
  peer_->send(peer_->frame(Opcode::RcWriteFirst, kEpsn, reth(va(Rw), rkey(Rw), 4096), bytes(kPmtu / 2, 1)));
  expect_fatal_nak(kNakInvalidRequest);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, WriteFirstShorterThanThePathMtuIsInvalidRequest) {
  // 100 bytes is no MTU at all: still the responder's NAK, not a silent drop in the parser.
  peer_->send(peer_->frame(Opcode::RcWriteFirst, kEpsn, reth(va(Rw), rkey(Rw), 4096), bytes(100, 1)));
  expect_fatal_nak(kNakInvalidRequest);
  EXPECT_EQ(count(rdma::Counter::InvalidRequests), 1u);
  EXPECT_EQ(parse_drops(), 0u);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, EmptyLastIsInvalidRequest) {
  ibv_sge g = sge(region(Recv), kRegionBytes, mr_[Recv]);
  ASSERT_EQ(post_recv(ep_, 9, &g, 1), 0);
  peer_->send(peer_->frame(Opcode::RcSendFirst, kEpsn, {}, bytes(kPmtu, 1), false));
  peer_->send(peer_->frame(Opcode::RcSendLast, kEpsn + 1, {}, {}));
  expect_fatal_nak(kNakInvalidRequest, kEpsn + 1);
  EXPECT_EQ(count(rdma::Counter::InvalidRequests), 1u);
  EXPECT_EQ(parse_drops(), 0u);
}

TEST_F(HostileInput, ShortMiddleIsInvalidRequest) {
  peer_->send(peer_->frame(Opcode::RcWriteFirst, kEpsn, reth(va(Rw), rkey(Rw), 3 * kPmtu), bytes(kPmtu, 1), false));
  peer_->send(peer_->frame(Opcode::RcWriteMiddle, kEpsn + 1, {}, bytes(kPmtu / 2, 2)));
  expect_fatal_nak(kNakInvalidRequest, kEpsn + 1);
  EXPECT_TRUE(std::equal(arena_.begin() + kGuard + kPmtu, arena_.end(), before_.begin() + kGuard + kPmtu));
}

TEST_F(HostileInput, RethLengthDisagreeingWithPayloadIsInvalidRequest) {
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), 16), bytes(64, 1)));
  expect_fatal_nak(kNakInvalidRequest);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, LastOverrunningItsRethIsInvalidRequest) {
  peer_->send(peer_->frame(Opcode::RcWriteFirst, kEpsn, reth(va(Rw), rkey(Rw), kPmtu + 8), bytes(kPmtu, 1), false));
  peer_->send(peer_->frame(Opcode::RcWriteLast, kEpsn + 1, {}, bytes(64, 2)));
  expect_fatal_nak(kNakInvalidRequest, kEpsn + 1);
  EXPECT_TRUE(std::equal(arena_.begin() + kGuard + kPmtu, arena_.end(), before_.begin() + kGuard + kPmtu));
}

TEST_F(HostileInput, SendLongerThanTheReceiveBufferIsInvalidRequest) {
  ibv_sge g = sge(region(Recv), 16, mr_[Recv]);
  ASSERT_EQ(post_recv(ep_, 9, &g, 1), 0);
  peer_->send(peer_->frame(Opcode::RcSendOnly, kEpsn, {}, bytes(64, 1)));
  expect_fatal_nak(kNakInvalidRequest);
  const auto wcs = drain(ep_);
  ASSERT_FALSE(wcs.empty());
  EXPECT_EQ(wcs[0].status, IBV_WC_LOC_LEN_ERR);
  EXPECT_TRUE(memory_untouched());
}

// ---- memory access (NAK remote access error, class C) -------------------------------------

TEST_F(HostileInput, VaPlusLengthOverflowIsRemoteAccessError) {
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(UINT64_MAX - 15, rkey(Rw), 64), bytes(64, 1)));
  expect_fatal_nak(kNakRemoteAccess);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, WriteEndingPastTheRegionIsRemoteAccessError) {
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw, kRegionBytes - 8), rkey(Rw), 16), bytes(16, 1)));
  expect_fatal_nak(kNakRemoteAccess);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, WriteStartingBeforeTheRegionIsRemoteAccessError) {
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw) - 8, rkey(Rw), 16), bytes(16, 1)));
  expect_fatal_nak(kNakRemoteAccess);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, MultiPacketWriteLongerThanTheRegionIsRefusedAtFirst) {
  peer_->send(peer_->frame(Opcode::RcWriteFirst, kEpsn, reth(va(Rw), rkey(Rw), kRegionBytes + kPmtu), bytes(kPmtu, 1)));
  expect_fatal_nak(kNakRemoteAccess);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, ReadPastTheRegionIsRemoteAccessError) {
  peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn, reth(va(Rw, 8), rkey(Rw), kRegionBytes)));
  expect_fatal_nak(kNakRemoteAccess);
}

TEST_F(HostileInput, RegionDeregisteredInTheMiddleOfAWriteIsNeverWritten) {
  peer_->send(peer_->frame(Opcode::RcWriteFirst, kEpsn, reth(va(Rw), rkey(Rw), 2 * kPmtu), bytes(kPmtu, 1), false));
  ASSERT_TRUE(mrs_.deregister(rkey(Rw)).ok());  // the application frees it: the memory may be reused
  peer_->send(peer_->frame(Opcode::RcWriteLast, kEpsn + 1, {}, bytes(kPmtu, 2)));
  expect_fatal_nak(kNakRemoteAccess, kEpsn + 1);
  EXPECT_TRUE(std::equal(arena_.begin() + kGuard + kPmtu, arena_.end(), before_.begin() + kGuard + kPmtu));
}

TEST_F(HostileInput, RegionDeregisteredBeforeTheReadResponseIsRemoteAccessError) {
  peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn, reth(va(Rw), rkey(Rw), 2 * kPmtu)));
  ASSERT_TRUE(mrs_.deregister(rkey(Rw)).ok());  // before the engine got to send the data
  expect_fatal_nak(kNakRemoteAccess);
  EXPECT_EQ(count(rdma::Counter::ReadResponsesSent), 0u);
}

TEST_F(HostileInput, BadRkeyIsRemoteAccessError) {
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), 0xDEAD00, 8), bytes(8, 1)));
  expect_fatal_nak(kNakRemoteAccess);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, StaleRkeyOfADeregisteredRegionIsRemoteAccessError) {
  const std::uint32_t stale = rkey(Rw);
  ASSERT_TRUE(mrs_.deregister(stale).ok());
  // The same memory registered again gets a new key: the old one must not reach it.
  auto again = mrs_.register_region(ep_.pd, region(Rw), kRegionBytes, kAll);
  ASSERT_TRUE(again.ok());
  ASSERT_NE((*again)->rkey(), stale);
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), stale, 8), bytes(8, 1)));
  expect_fatal_nak(kNakRemoteAccess);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, RkeyOfAnotherProtectionDomainIsRemoteAccessError) {
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(OtherPd), rkey(OtherPd), 8), bytes(8, 1)));
  expect_fatal_nak(kNakRemoteAccess);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, WriteToAReadOnlyRegionIsRemoteAccessError) {
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(ReadOnly), rkey(ReadOnly), 8), bytes(8, 1)));
  expect_fatal_nak(kNakRemoteAccess);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, AtomicOnARegionWithoutAtomicAccessIsRemoteAccessError) {
  peer_->send(peer_->frame(Opcode::RcFetchAdd, kEpsn, atomic_eth(va(NoAtomic), rkey(NoAtomic), 1, 0)));
  expect_fatal_nak(kNakRemoteAccess);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, MisalignedAtomicIsInvalidRequest) {
  peer_->send(peer_->frame(Opcode::RcCmpSwap, kEpsn, atomic_eth(va(Rw, 4), rkey(Rw), 1, 0)));
  expect_fatal_nak(kNakInvalidRequest);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, AlignedAtomicJustPastTheRegionIsRemoteAccessError) {
  peer_->send(peer_->frame(Opcode::RcFetchAdd, kEpsn, atomic_eth(va(Rw, kRegionBytes), rkey(Rw), 1, 0)));
  expect_fatal_nak(kNakRemoteAccess);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, ReadLargerThanAMessageMayBeIsInvalidRequest) {
  peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn, reth(va(Rw), rkey(Rw), 0x80000001u)));
  expect_fatal_nak(kNakInvalidRequest);
}

TEST_F(HostileInput, MoreOutstandingReadsThanNegotiatedIsInvalidRequest) {
  for (std::uint32_t i = 0; i < 5; ++i)
    peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn + i, reth(va(Rw), rkey(Rw), 8)));
  const auto out = peer_->collect();
  ASSERT_EQ(out.size(), 5u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i].pkt.opcode(), raw(Opcode::RcReadResponseOnly));
  EXPECT_EQ(out[4].pkt.opcode(), raw(Opcode::RcAck));
  EXPECT_EQ(syn(out[4]), kNakInvalidRequest);
  EXPECT_EQ(out[4].pkt.psn(), kEpsn + 4);
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Err);
}

TEST_F(HostileInput, ReplayedDuplicatesDoNotCountAgainstOutstandingReads) {
  // A duplicated atomic is answered again from the saved result; those replays must not use up
  // max_dest_rd_atomic (4) and make the next new request look like one too many.
  peer_->send(peer_->frame(Opcode::RcFetchAdd, kEpsn, atomic_eth(va(Rw), rkey(Rw), 1, 0)));
  for (int i = 0; i < 3; ++i) peer_->send(peer_->frame(Opcode::RcFetchAdd, kEpsn, atomic_eth(va(Rw), rkey(Rw), 1, 0)));
  peer_->send(peer_->frame(Opcode::RcFetchAdd, kEpsn + 1, atomic_eth(va(Rw), rkey(Rw), 1, 0)));
  const auto out = peer_->collect();
  ASSERT_EQ(out.size(), 5u);
  for (const Reply& r : out) EXPECT_EQ(r.pkt.opcode(), raw(Opcode::RcAtomicAck));
  EXPECT_EQ(out[4].pkt.psn(), kEpsn + 1);
  EXPECT_EQ(count(rdma::Counter::DuplicateAtomicReplayed), 3u);
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Rts);
}

// ---- floods ------------------------------------------------------------------------------

TEST_F(HostileInput, FloodOfDuplicateWritesIsAcknowledgedNeverReexecuted) {
  peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), 8), bytes(8, 7)));
  ASSERT_EQ(peer_->collect().size(), 1u);
  before_ = arena_;
  std::size_t answers = 0;
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 100; ++i)
      peer_->send(peer_->frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), 8), bytes(8, 9)));
    const auto out = peer_->collect();
    ASSERT_LE(out.size(), 1u);  // coalesced: one ACK per burst
    answers += out.size();
  }
  EXPECT_EQ(answers, 100u);
  EXPECT_EQ(count(rdma::Counter::DuplicateRequest), 10000u);
  EXPECT_TRUE(memory_untouched());
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Rts);
}

TEST_F(HostileInput, FloodOfDuplicateReadsIsBoundedByTheResponseQueue) {
  peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn, reth(va(Rw), rkey(Rw), 2 * kPmtu)));
  ASSERT_EQ(peer_->collect().size(), 2u);
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 100; ++i) peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn, reth(va(Rw), rkey(Rw), 2 * kPmtu)));
    // Each retried READ restarts the same response stream instead of queueing another.
    EXPECT_LE(peer_->collect().size(), 2u);
  }
  EXPECT_EQ(count(rdma::Counter::DuplicateRequest), 5000u);
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Rts);
  EXPECT_TRUE(memory_untouched());
}

TEST_F(HostileInput, FloodOfDuplicateAtomicsIsReplayedNeverReexecuted) {
  peer_->send(peer_->frame(Opcode::RcFetchAdd, kEpsn, atomic_eth(va(Rw), rkey(Rw), 5, 0)));
  ASSERT_EQ(peer_->collect().size(), 1u);
  before_ = arena_;
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 100; ++i) peer_->send(peer_->frame(Opcode::RcFetchAdd, kEpsn, atomic_eth(va(Rw), rkey(Rw), 5, 0)));
    EXPECT_LE(peer_->collect().size(), 2u * 4 + 4);  // the response queue (2 x max_dest_rd_atomic + 4), no more
  }
  // Once the response queue is full the rest are dropped unexecuted (the requester retries).
  EXPECT_GT(count(rdma::Counter::ResponderBusyDrops), 0u);
  EXPECT_EQ(count(rdma::Counter::DuplicateRequest) + count(rdma::Counter::ResponderBusyDrops), 10000u);
  EXPECT_EQ(count(rdma::Counter::DuplicateAtomicReplayed), count(rdma::Counter::DuplicateRequest));
  EXPECT_TRUE(memory_untouched());
}

// max_dest_rd_atomic (4 here) bounds the READ answers a QP may have queued: first answers
// beyond it get NAK invalid request (above), and a duplicate drops every answer queued after its
// PSN (the requester went back there and asks again), so replays never pile up either.
TEST_F(HostileInput, DuplicateReadsNeverQueueMoreThanTheNegotiatedResources) {
  constexpr std::uint32_t kLen = 4 * kPmtu;
  for (std::uint32_t r = 0; r < 4; ++r)
    peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn + 4 * r, reth(va(Rw), rkey(Rw), kLen)));
  for (int round = 0; round < 50; ++round)
    for (std::uint32_t r = 0; r < 4; ++r) {
      peer_->send(peer_->frame(Opcode::RcReadRequest, kEpsn + 4 * r, reth(va(Rw), rkey(Rw), kLen)));
      ASSERT_LE(ep_.qp->responder().queued_read_packets(), 4u * 4);
    }
  EXPECT_EQ(count(rdma::Counter::DuplicateRequest), 200u);
  EXPECT_EQ(count(rdma::Counter::InvalidRequests), 0u);
  EXPECT_EQ(ep_.qp->state(), rdma::QpState::Rts);
}

// One QP asked fifty times for the same 16 MiB must not hold up another QP's answer: each
// duplicate restarts the one response stream, and the engine gives every QP with something to
// send tx_quantum frames per turn.
TEST_F(HostileInput, FiftyDuplicateLargeReadsCannotHoldUpAnotherQp) {
  std::vector<std::byte> big(16u << 20);
  const rdma::MemoryRegion* big_mr = reg(*engine_, ep_.pd, big, kAll);
  const auto big_read = peer_->frame(Opcode::RcReadRequest, kEpsn, reth(reinterpret_cast<std::uint64_t>(big.data()),
                                                                          big_mr->rkey(), static_cast<std::uint32_t>(big.size())));
  for (int i = 0; i < 51; ++i) peer_->send(big_read);
  EXPECT_EQ(count(rdma::Counter::DuplicateRequest), 50u);
  EXPECT_EQ(ep_.qp->responder().queued_read_packets(), big.size() / kPmtu);  // one stream, not fifty

  Endpoint other = make_endpoint(*engine_, QpOptions{}, ep_.pd);
  bring_up_another(other.qp);
  RawPeer other_peer(*engine_, kPeerMac, kPeerIp, kPeerQpn + 1, other.qp->qpn());
  // The worker takes bursts of 32 frames; the hog has sent a few when the other request comes.
  constexpr std::size_t kBurst = 32;
  std::vector<std::vector<std::byte>> bufs(kBurst, std::vector<std::byte>(8192));
  std::vector<rdma::TxFrame> burst(kBurst);
  const auto transmit = [&] {
    for (std::size_t i = 0; i < kBurst; ++i) burst[i] = rdma::TxFrame{bufs[i].data(), 8192, 0};
    return engine_->transmit(burst, 0);
  };
  for (int i = 0; i < 10; ++i) ASSERT_EQ(transmit(), kBurst);
  other_peer.send(other_peer.frame(Opcode::RcWriteOnly, kEpsn, reth(va(Rw), rkey(Rw), 8), bytes(8, 3)));
  const std::uint32_t quantum = engine_->config().tuning.tx_quantum;
  std::uint32_t frames = 0;
  bool answered = false;
  while (!answered && frames < 100 * quantum) {
    const std::size_t n = transmit();
    ASSERT_EQ(n, kBurst);
    for (std::size_t i = 0; i < n && !answered; ++i) {
      ++frames;
      Packet p;
      ASSERT_EQ(parse_frame(std::span<const std::byte>(burst[i].data, burst[i].length), {}, p), ParseError::None);
      answered = p.opcode() == raw(Opcode::RcAck);
    }
  }
  EXPECT_TRUE(answered);
  EXPECT_LE(frames, quantum + 1) << "frames sent before the other QP's ACK";
}

TEST_F(HostileInput, FloodOfFramesForUnknownQpsLeavesNothingBehind) {
  for (std::uint32_t q = 0; q < 10000; ++q) {
    RawPeer stranger(*engine_, kPeerMac, kPeerIp, kPeerQpn, 0x100000 + q);
    stranger.send(stranger.frame(Opcode::RcWriteOnly, q, reth(va(Rw), rkey(Rw), 8), bytes(8, 1)));
  }
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::UnknownQp), 10000u);
  EXPECT_FALSE(engine_->has_tx_work());
  EXPECT_TRUE(memory_untouched());
}

}  // namespace
}  // namespace roce::test::hostile_input_test
