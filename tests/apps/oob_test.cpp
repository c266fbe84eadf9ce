// The out-of-band records and exchanges of ibv_rc_pingpong and perftest, checked against the
// bytes real tools sent (../shared/captures) and end to end over a local TCP connection.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "client/oob/cm_record.hpp"
#include "client/oob/perftest.hpp"
#include "client/oob/pingpong.hpp"
#include "client/oob/refusal.hpp"
#include "tests/support/loopback_tcp.hpp"
#include "tests/support/hex.hpp"

namespace roce::client {
namespace {

std::vector<std::byte> text_record(const std::string& s) {
  std::vector<std::byte> v(s.size() + 1);
  std::memcpy(v.data(), s.c_str(), s.size() + 1);
  return v;
}

// rc_pingpong.pcap (rxe, 10.77.0.3 client): "0000:000011:4ae6c8:...ffff0a4d0003"
TEST(PingpongRecord, ParsesAndReformatsTheRecordRdmaCoreSent) {
  const auto rec = text_record("0000:000011:4ae6c8:00000000000000000000ffff0a4d0003");
  ASSERT_EQ(rec.size(), kPingpongRecordBytes);
  auto d = parse_pingpong(rec);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->qpn, 0x11u);
  EXPECT_EQ(d->psn, 0x4ae6c8u);
  EXPECT_EQ(d->gid.raw[10], 0xFF);
  EXPECT_EQ(d->gid.raw[15], 0x03);
  const auto again = format_pingpong(*d);
  EXPECT_TRUE(std::equal(again.begin(), again.end(), rec.begin()));
}

TEST(PingpongRecord, RejectsGarbageWithAReason) {
  EXPECT_FALSE(parse_pingpong(text_record("hello")).ok());
  auto bad = text_record("0000:00001z:4ae6c8:00000000000000000000ffff0a4d0003");
  const auto r = parse_pingpong(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("LID:QPN:PSN:GID"), std::string::npos);
}

// ib_write_bw.pcap (rxe client) and connectx_ib_send_bw.pcap (ConnectX client).
TEST(PerftestRecord, ParsesTheRecordsPerftestSent) {
  const auto rxe = text_record(
      "0000:0001:000018:932a2e:0000082b:0000563016685000:00:00:00:00:00:00:00:00:00:00:ff:ff:0a:4d:00:03:00000000:");
  ASSERT_EQ(rxe.size(), kPerftestRecordBytes);
  auto d = parse_perftest(rxe);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->out_reads, 1);
  EXPECT_EQ(d->qpn, 0x18u);
  EXPECT_EQ(d->psn, 0x932a2eu);
  EXPECT_EQ(d->rkey, 0x82bu);
  EXPECT_EQ(d->vaddr, 0x0000563016685000ull);
  EXPECT_EQ(d->gid.raw[14], 0x00);
  EXPECT_EQ(d->gid.raw[15], 0x03);
  EXPECT_EQ(format_perftest(*d), std::string(reinterpret_cast<const char*>(rxe.data()), rxe.size()));

  const auto cx = text_record("0000:0001:00018b:1d8791:001bdee1:0000555c79c19000:00:00:00:00:00:00:00:00:00:00:ff:ff:0a:0a:0a:1a:00000000:");
  auto c = parse_perftest(cx);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->rkey, 0x001bdee1u);
}

TEST(PerftestRecord, TheNoGidFormIs59Bytes) {
  PerftestDest d;
  d.has_gid = false;
  d.qpn = 0x42;
  const std::string rec = format_perftest(d);
  EXPECT_EQ(rec.size(), kPerftestRecordNoGidBytes);
  auto back = parse_perftest(std::as_bytes(std::span{rec}));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->has_gid);
  EXPECT_EQ(back->qpn, 0x42u);
}

TEST(PerftestWire, DoublesTravelBigEndian) {
  // ib_write_bw.pcap: the client's bw_peak field is 40 25 47 aa 9a a7 c8 1b.
  const double v = double_from_wire(0x402547aa9aa7c81bULL);
  EXPECT_NEAR(v, 10.639, 0.001);
  EXPECT_EQ(double_to_wire(v), 0x402547aa9aa7c81bULL);
  EXPECT_LT(compare_versions("5.31", "6.06"), 0);
  EXPECT_GT(compare_versions("6.06", "5.33"), 0);
  EXPECT_EQ(compare_versions("5.99", "5.99"), 0);
}

using test::LoopbackPair;

TEST(PerftestSession, ClientAndServerAgreeOnEveryStep) {
  LoopbackPair p;
  PerftestDest c_dest, s_dest;
  c_dest.qpn = 0x11;
  c_dest.rkey = 0xabc;
  s_dest.qpn = 0x22;
  s_dest.vaddr = 0x7f0000001000;
  PerftestResults c_res{4096, 32, 10.5, 9.5, 0.3};
  std::thread server([&] {
    PerftestSession s(p.server, OobRole::Server);
    ASSERT_TRUE(s.exchange_versions().ok());
    ASSERT_TRUE(s.exchange_sizes(65536).ok());  // a 64 KiB-page host
    EXPECT_EQ(s.cycle_buffer(), 65536u);
    auto mtu = s.exchange_mtu(IBV_MTU_4096);
    ASSERT_TRUE(mtu.ok());
    EXPECT_EQ(*mtu, IBV_MTU_1024);
    auto peer = s.exchange_dest(s_dest);
    ASSERT_TRUE(peer.ok());
    EXPECT_EQ(peer->qpn, 0x11u);
    auto res = s.exchange_results(PerftestResults{});
    ASSERT_TRUE(res.ok());
    EXPECT_EQ(res->iters, 32u);
    EXPECT_DOUBLE_EQ(res->bw_avg, 9.5);
    EXPECT_TRUE(s.exchange_done().ok());
  });
  PerftestSession c(p.client, OobRole::Client);
  ASSERT_TRUE(c.exchange_versions().ok());
  EXPECT_EQ(c.remote_version(), "6.06");
  ASSERT_TRUE(c.exchange_sizes().ok());
  EXPECT_EQ(c.cycle_buffer(), 65536u);  // both keep the larger, as perftest's check_sys_data
  auto mtu = c.exchange_mtu(IBV_MTU_1024);
  ASSERT_TRUE(mtu.ok());
  EXPECT_EQ(*mtu, IBV_MTU_1024);
  auto peer = c.exchange_dest(c_dest);
  ASSERT_TRUE(peer.ok());
  EXPECT_EQ(peer->vaddr, 0x7f0000001000u);
  ASSERT_TRUE(c.exchange_results(c_res).ok());
  EXPECT_TRUE(c.exchange_done().ok());
  server.join();
}

// rocev2-dp's offer of selective repeat rides after the version's NUL, where perftest (atof on
// the 16 bytes) never looks; perftest's own record has zeros there.
TEST(PerftestVersionRecord, OurOfferSitsAfterTheNulWherePerftestReadsNothing) {
  const cm::Ece offer = cm::selective_repeat_ece(64);
  const auto rec = perftest_version_record(PerftestSession::kVersion, offer);
  EXPECT_STREQ(rec.data(), "6.06");
  EXPECT_DOUBLE_EQ(std::atof(rec.data()), 6.06);  // all perftest reads of it
  EXPECT_EQ(std::string(rec.data() + 5, 3), "RDP");  // the vendor ID 0x524450, big-endian
  EXPECT_EQ(perftest_version_ece(rec), offer);
  const auto plain = perftest_version_record(PerftestSession::kVersion);
  EXPECT_TRUE(std::all_of(plain.begin() + 4, plain.end(), [](char c) { return c == 0; }));
  EXPECT_EQ(perftest_version_ece(plain), cm::Ece{});
  // A record with no room after its text, or someone else's bytes there, offers nothing.
  std::array<char, kPerftestVersionBytes> full{};
  std::memset(full.data(), '9', full.size() - 1);
  EXPECT_EQ(perftest_version_ece(full), cm::Ece{});
  auto other = plain;
  other[5] = 0x15, other[6] = char(0xb3);  // a PCI vendor ID is not ours
  other[11] = 1;
  EXPECT_EQ(cm::selective_repeat_window(perftest_version_ece(other)), 0u);
}

// Our client offers; a perftest server (zeros after its version) gives go-back-N, another
// rocev2-dp server the smaller window.
TEST(PerftestVersionRecord, SelectiveRepeatIsAgreedOnlyWithAServerThatAnswersIt) {
  for (const std::uint32_t server_window : {0u, 32u, 128u}) {
    LoopbackPair p;
    const cm::Ece offer = cm::selective_repeat_ece(64);
    std::thread server([&] {
      // A server reads the client's record first: its answer follows the offer.
      std::array<char, kPerftestVersionBytes> in{};
      ASSERT_TRUE(p.server.read_exact(std::as_writable_bytes(std::span{in}), 3000).ok());
      const cm::Ece answer = cm::answer_selective_repeat(perftest_version_ece(in), server_window);
      const auto out = perftest_version_record(PerftestSession::kVersion, answer);
      ASSERT_TRUE(p.server.write_all(std::as_bytes(std::span{out})).ok());
    });
    PerftestSession c(p.client, OobRole::Client);
    ASSERT_TRUE(c.exchange_versions(offer).ok());
    server.join();
    EXPECT_EQ(c.remote_version(), "6.06");
    EXPECT_EQ(cm::agreed_selective_repeat(offer, c.remote_ece()), std::min(server_window, 64u)) << server_window;
  }
}

// perftest closes after its "done" without reading ours; when its "done" and the reset that
// answers ours are both lost, nothing more ever arrives. The run is over all the same.
TEST(PerftestSession, ThePeersDoneIsNotWaitedForBeyondAShortGrace) {
  LoopbackPair p;
  std::thread server([&] {
    std::array<std::byte, 5> done{};
    EXPECT_TRUE(p.server.read_exact(done, 5000).ok());
    // Silent and open until the client closes: waiting for this side's "done" could only end
    // in the exchange's 30 s timeout, an error.
    std::array<std::byte, 1> more{};
    (void)p.server.read_exact(more, 60'000);
  });
  PerftestSession c(p.client, OobRole::Client, 30'000);
  EXPECT_TRUE(c.exchange_done().ok());
  p.client = TcpStream();
  server.join();
}

TEST(PingpongExchange, ServerConnectsBeforeAnswering) {
  LoopbackPair p;
  PingpongDest c_dest, s_dest;
  c_dest.qpn = 0x11;
  c_dest.psn = 0x123;
  s_dest.qpn = 0x33;
  bool connected = false;
  std::thread server([&] {
    auto r = pingpong_server_exchange(p.server, s_dest, [&](const PingpongDest& d) {
      EXPECT_EQ(d.psn, 0x123u);
      connected = true;
      return Status{};
    });
    ASSERT_TRUE(r.ok()) << r.error().message;
  });
  auto r = pingpong_client_exchange(p.client, c_dest);
  server.join();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->qpn, 0x33u);
  EXPECT_TRUE(connected);
}

TEST(PingpongExchange, PeerClosingMidRecordIsAClearError) {
  LoopbackPair p;
  const std::string half = "0000:000011";
  ASSERT_TRUE(p.client.write_all(std::as_bytes(std::span{half})).ok());
  p.client = TcpStream{};
  auto r = pingpong_server_exchange(p.server, PingpongDest{}, [](const PingpongDest&) { return Status{}; }, 2000);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("closed"), std::string::npos) << r.error().message;
}

// ibv_srq_pingpong: 256 records each way whatever -q, the used ones first, the rest zeroed.
TEST(SrqPingpongExchange, EachSideSends256RecordsAndTakesTheUsedOnes) {
  LoopbackPair p;
  std::vector<PingpongDest> client_qps(4), server_qps(2);
  for (std::uint32_t i = 0; i < client_qps.size(); ++i) client_qps[i] = PingpongDest{0, 0x100 + i, 0x200 + i, {}};
  for (std::uint32_t i = 0; i < server_qps.size(); ++i) server_qps[i] = PingpongDest{0, 0x300 + i, 0x400 + i, {}};
  std::vector<PingpongDest> got_by_server;
  std::thread server([&] {
    std::array<std::byte, kPingpongRecordBytes> first{};
    ASSERT_TRUE(p.server.read_exact(first, 2000).ok());
    auto d = parse_pingpong(first);
    ASSERT_TRUE(d.ok()) << d.error().message;
    auto all = read_srq_pingpong_records(p.server, *d, 2000);
    ASSERT_TRUE(all.ok()) << all.error().message;
    got_by_server = *all;
    ASSERT_TRUE(write_srq_pingpong_records(p.server, server_qps).ok());
    std::array<std::byte, 5> done{};
    ASSERT_TRUE(p.server.read_exact(done, 2000).ok());
    EXPECT_EQ(std::memcmp(done.data(), "done", 5), 0);
  });
  auto r = srq_pingpong_client_exchange(p.client, client_qps, 2000);
  server.join();
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(got_by_server.size(), 4u);
  EXPECT_EQ(got_by_server[3].qpn, 0x103u);
  EXPECT_EQ(got_by_server[3].psn, 0x203u);
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[1].qpn, 0x301u);
  EXPECT_EQ((*r)[1].psn, 0x401u);
}

TEST(SrqPingpongExchange, AUsedRecordAfterAnUnusedOneIsRefusedWithItsPlace) {
  LoopbackPair p;
  std::vector<PingpongDest> recs(3);
  recs[0].qpn = 0x10;
  recs[2].qpn = 0x12;  // record 3 used, record 2 not
  ASSERT_TRUE(write_srq_pingpong_records(p.client, recs).ok());
  std::array<std::byte, kPingpongRecordBytes> first{};
  ASSERT_TRUE(p.server.read_exact(first, 2000).ok());
  auto r = read_srq_pingpong_records(p.server, *parse_pingpong(first), 2000);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("record 3"), std::string::npos) << r.error().message;
}

TEST(SrqPingpongExchange, APeerStoppingShortOf256RecordsIsAClearError) {
  LoopbackPair p;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(p.client.write_all(format_pingpong(PingpongDest{0, 0x20u + i, 1, {}})).ok());
  p.client = TcpStream{};
  std::array<std::byte, kPingpongRecordBytes> first{};
  ASSERT_TRUE(p.server.read_exact(first, 2000).ok());
  auto r = read_srq_pingpong_records(p.server, *parse_pingpong(first), 2000);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("record 11 of 256"), std::string::npos) << r.error().message;
}

// A server that will not serve says why in place of its next record, then closes; the clients
// report the reason, whether the line is longer or shorter than the record they waited for.
TEST(Refusal, PerftestAndPingpongClientsReportTheServersReason) {
  for (const std::string& reason : {std::string("1 sessions are running (--max-sessions 1); try again when one has ended"),
                                   std::string("QP limit")}) {
    {
      LoopbackPair p;
      std::thread server([&] {
        std::array<std::byte, 16> version{};
        EXPECT_TRUE(p.server.read_exact(version, 5000).ok());
        send_refusal(p.server, reason);
        p.server = TcpStream();
      });
      PerftestSession c(p.client, OobRole::Client, 5000);
      const Status s = c.exchange_versions();
      server.join();
      ASSERT_FALSE(s.ok());
      EXPECT_EQ(s.error().message, "the server refused: " + reason);
    }
    {
      LoopbackPair p;
      std::thread server([&] {
        std::array<std::byte, kPingpongRecordBytes> rec{};
        EXPECT_TRUE(p.server.read_exact(rec, 5000).ok());
        send_refusal(p.server, reason);
        p.server = TcpStream();
      });
      auto r = pingpong_client_exchange(p.client, PingpongDest{}, 5000);
      server.join();
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error().message, "the server refused: " + reason);
    }
  }
}

TEST(Refusal, ARecordIsNotTakenForARefusal) {
  LoopbackPair p;
  const auto rec = format_pingpong(PingpongDest{});
  EXPECT_FALSE(read_refusal(rec, p.client).has_value());
  EXPECT_EQ(format_refusal("a\nb"), "REFUSED a b\n");
}

// A record must arrive whole within the timeout: a byte every 100 ms does not stretch it.
TEST(TcpStream, AReadHasOneDeadlineForTheWholeRecord) {
  LoopbackPair p;
  std::atomic<bool> stop{false};
  std::thread dripper([&] {
    for (int i = 0; i < 40 && !stop; ++i) {
      const std::byte b{'x'};
      (void)p.client.write_all(std::span{&b, 1});
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::array<std::byte, 52> rec{};
  const Status s = p.server.read_exact(rec, 1000);
  stop = true;
  dripper.join();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ETIMEDOUT) << s.error().message;
}

}  // namespace
}  // namespace roce::client

// perftest -R's record: struct pingpong_dest as rdma_write_keys sends it (x86-64 layout, integers
// in network order), 56 bytes.
namespace roce::client {
namespace {

TEST(PerftestCmRecord, LayoutIsPingpongDestInNetworkOrder) {
  PerftestDest d;
  d.lid = 0x0102;
  d.out_reads = 16;
  d.qpn = 0x000123;
  d.psn = 0xABCDEF;
  d.rkey = 0x11223344;
  d.vaddr = 0x0000'7f00'1234'5678ULL;
  for (int i = 0; i < 16; ++i) d.gid.raw[i] = static_cast<std::uint8_t>(0xA0 + i);
  d.srqn = 7;
  const auto w = format_perftest_cm(d, 3);
  ASSERT_EQ(w.size(), 56u);
  auto at = [&](std::size_t i) { return std::to_integer<unsigned>(w[i]); };
  EXPECT_EQ(at(2), 0x01u);  // lid, big-endian int
  EXPECT_EQ(at(3), 0x02u);
  EXPECT_EQ(at(7), 16u);    // out_reads
  EXPECT_EQ(at(10), 0x01u); // qpn 0x000123
  EXPECT_EQ(at(11), 0x23u);
  EXPECT_EQ(at(13), 0xABu); // psn
  EXPECT_EQ(at(16), 0x11u); // rkey
  for (std::size_t i = 20; i < 24; ++i) EXPECT_EQ(at(i), 0u) << "padding " << i;
  EXPECT_EQ(at(26), 0x7Fu);  // vaddr, big-endian 64-bit at 24
  EXPECT_EQ(at(31), 0x78u);
  EXPECT_EQ(at(32), 0xA0u);  // GID raw at 32
  EXPECT_EQ(at(47), 0xAFu);
  EXPECT_EQ(at(51), 7u);     // srqn at 48
  EXPECT_EQ(at(55), 3u);     // gid_index at 52
  auto back = parse_perftest_cm(w);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->lid, d.lid);
  EXPECT_EQ(back->out_reads, d.out_reads);
  EXPECT_EQ(back->qpn, d.qpn);
  EXPECT_EQ(back->psn, d.psn);
  EXPECT_EQ(back->rkey, d.rkey);
  EXPECT_EQ(back->vaddr, d.vaddr);
  EXPECT_EQ(std::memcmp(back->gid.raw, d.gid.raw, 16), 0);
  // Through the text record and back (the control channel's translation) nothing changes.
  const std::string text = format_perftest(*back);
  auto again = parse_perftest(std::as_bytes(std::span{text}));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(format_perftest_cm(*again, 3), w);
}

TEST(PerftestCmRecord, RefusesOtherLengthsAndOutOfRangeFields) {
  std::array<std::byte, 56> w{};
  EXPECT_FALSE(parse_perftest_cm(std::span{w}.first(55)).ok());
  std::array<std::byte, 57> longer{};
  EXPECT_FALSE(parse_perftest_cm(longer).ok());
  w[1] = std::byte{1};  // LID 0x00010000: no text record holds it
  auto r = parse_perftest_cm(w);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("LID"), std::string::npos);
  w[1] = std::byte{0};
  EXPECT_TRUE(parse_perftest_cm(w).ok());  // perftest's zeroed QP 0 record of its rdma_cm syncs
}

}  // namespace
}  // namespace roce::client
