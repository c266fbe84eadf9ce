// The out-of-band exchanges replayed from real captures (TCP 18515 of ConnectX and rxe runs of
// ib_write_bw, ib_read_bw, ib_send_bw and ibv_rc_pingpong; fixtures made by
// scripts/extract_oob_streams.sh). Our client code talks to the recorded server and our server
// to the recorded client: each must accept the real peer's records and answer with records of
// the same size, layout and sequence as the real tool did.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "client/buffers.hpp"
#include "client/oob/pingpong.hpp"
#include "client/oob_server.hpp"
#include "client/perftest_client.hpp"
#include "dataplane/ring_port.hpp"

#ifndef ROCE_SOURCE_ROOT
#define ROCE_SOURCE_ROOT "."
#endif

namespace roce::client::oob_replay_test {
namespace {

using Bytes = std::vector<std::byte>;

// One step of the exchange: what the client sent and what the server sent (either may be
// empty: ibv_rc_pingpong's "done" gets no answer). Within a step each side's order follows
// perftest's rule (the client writes then reads, the server reads then writes), which is what
// our code does too; the capture's order of the two segments inside a step does not matter.
struct Step {
  Bytes client, server;
};

Bytes from_hex(const std::string& h) {
  Bytes b;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2)
    b.push_back(static_cast<std::byte>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return b;
}

std::vector<Step> load(const std::string& name) {
  std::ifstream in(std::string(ROCE_SOURCE_ROOT) + "/tests/apps/fixtures/oob/" + name + ".txt");
  std::vector<std::pair<char, Bytes>> segs;
  std::string line;
  while (std::getline(in, line))
    if (line.size() > 2 && (line[0] == 'C' || line[0] == 'S')) segs.emplace_back(line[0], from_hex(line.substr(2)));
  std::vector<Step> steps;
  for (std::size_t i = 0; i < segs.size(); ++i) {
    Step s;
    (segs[i].first == 'C' ? s.client : s.server) = segs[i].second;
    if (i + 1 < segs.size() && segs[i + 1].first != segs[i].first) {
      (segs[i + 1].first == 'C' ? s.client : s.server) = segs[i + 1].second;
      ++i;
    }
    steps.push_back(std::move(s));
  }
  return steps;
}

std::string text(const Bytes& b) {
  std::string s(reinterpret_cast<const char*>(b.data()), b.size());
  return s.substr(0, s.find('\0'));
}

// The positions of the ':' separators and of the NUL: a record's layout.
std::vector<std::size_t> layout(const Bytes& b) {
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < b.size(); ++i)
    if (b[i] == std::byte{':'} || b[i] == std::byte{0}) at.push_back(i);
  return at;
}

std::uint64_t be64(const Bytes& b) {
  std::uint64_t v = 0;
  for (std::byte x : b) v = v << 8 | std::to_integer<std::uint64_t>(x);
  return v;
}

ibv_gid gid_of(proto::Ipv4Addr ip) { return rdma::gid_from_ip(rdma::IpAddress::ipv4(ip)); }

// Plays one side of `steps` over `tcp`; collects what the other side sent, step by step.
std::vector<Bytes> play(TcpStream& tcp, const std::vector<Step>& steps, bool as_client, std::string& error) {
  std::vector<Bytes> got;
  for (const Step& s : steps) {
    const Bytes& mine = as_client ? s.client : s.server;
    Bytes theirs(as_client ? s.server.size() : s.client.size());
    if (as_client && !mine.empty())
      if (Status st = tcp.write_all(mine); !st) return error = st.error().message, got;
    if (!theirs.empty())
      if (Status st = tcp.read_exact(theirs, 10'000); !st) return error = st.error().message, got;
    if (!as_client && !mine.empty())
      if (Status st = tcp.write_all(mine); !st) return error = st.error().message, got;
    got.push_back(std::move(theirs));
  }
  // Nothing more after the last step: the peer closes.
  std::byte extra[1];
  if (tcp.read_exact(extra, 5'000)) error = "the peer sent more than the recorded exchange";
  return got;
}

struct Capture {
  const char* fixture;
  Verb verb;
  proto::Ipv4Addr client_ip, server_ip;
  bool complete;  // the ConnectX capture stops after the pre-traffic handshakes
};

const Capture kPerftest[] = {
    {"rxe_ib_write_bw", Verb::Write, {10, 77, 0, 3}, {10, 77, 0, 2}, true},
    {"rxe_ib_read_bw", Verb::Read, {10, 77, 0, 3}, {10, 77, 0, 2}, true},
    {"rxe_ib_send_bw", Verb::Send, {10, 77, 0, 3}, {10, 77, 0, 2}, true},
    {"connectx_ib_send_bw", Verb::Send, {10, 10, 10, 26}, {10, 10, 10, 27}, false},
};

void PrintTo(const Capture& c, std::ostream* os) { *os << c.fixture; }

class OobReplay : public ::testing::TestWithParam<Capture> {};

// Checks the records one side of ours sent against what the real tool sent in the same steps.
void expect_same_records(const std::vector<Step>& steps, const std::vector<Bytes>& ours, bool ours_is_client) {
  ASSERT_EQ(ours.size(), steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Bytes& real = ours_is_client ? steps[i].client : steps[i].server;
    const Bytes& mine = ours[i];
    ASSERT_EQ(mine.size(), real.size()) << "step " << i;
    if (real.size() == 108) {
      EXPECT_EQ(layout(mine), layout(real)) << "step " << i << ": " << text(mine) << " vs " << text(real);
      EXPECT_TRUE(parse_perftest(mine).ok()) << text(mine);
    } else if (real.size() == 8) {
      continue;  // a results field: our own figures
    } else if (i == 0) {
      // The version: 16 bytes, "M.mm" and NULs (perftest 4.5 says 6.06; the ConnectX host ran 5.99).
      EXPECT_EQ(text(mine), PerftestSession::kVersion);
      EXPECT_EQ(text(real).size(), 4u);
      EXPECT_TRUE(std::all_of(mine.begin() + 4, mine.end(), [](std::byte b) { return b == std::byte{0}; }));
    } else {
      // Version, cycle buffer, cache line, MTU and "done" match byte for byte.
      EXPECT_EQ(mine, real) << "step " << i << ": '" << text(mine) << "' vs '" << text(real) << "'";
    }
  }
}

TEST_P(OobReplay, OurClientAcceptsTheRealServerAndSendsWhatTheRealClientSent) {
  const Capture& c = GetParam();
  const auto steps = load(c.fixture);
  ASSERT_GE(steps.size(), 8u) << "fixture " << c.fixture << " missing or short";
  auto l = TcpListener::listen("127.0.0.1", 0);
  ASSERT_TRUE(l.ok());
  std::vector<Bytes> sent;
  std::string server_error;
  std::thread server([&] {
    auto tcp = l->accept(10'000);
    if (!tcp) return void(server_error = tcp.error().message);
    sent = play(*tcp, steps, false, server_error);
  });
  {
    auto tcp = TcpStream::connect("127.0.0.1", l->port(), 5'000);
    ASSERT_TRUE(tcp.ok());
    PerftestSession session(*tcp, OobRole::Client, 10'000);
    auto mtu = perftest_client_preamble(session, IBV_MTU_1024);  // what the recorded client offered
    ASSERT_TRUE(mtu.ok()) << mtu.error().message;
    EXPECT_EQ(*mtu, IBV_MTU_1024);
    EXPECT_EQ(session.remote_version(), text(steps[0].server));
    PerftestDest me;
    me.qpn = 0x11;
    me.psn = 0x123456;
    me.rkey = 0x2000;
    me.vaddr = 0x7f0012345000;
    me.gid = gid_of(c.client_ip);
    PerftestTest test;
    test.verb = c.verb;
    std::vector<PerftestDest> connected;
    const PerftestResults results{65536, 5000, 1000.5, 990.25, 0.0158};
    ClientHooks hooks;
    hooks.connect = [&](const std::vector<PerftestDest>& p) {
      connected = p;
      return Status{};
    };
    // The ConnectX capture ends where the traffic begins.
    hooks.traffic = [&](std::uint32_t) -> Result<PerftestResults> {
      if (!c.complete) return make_error(ECANCELED, "the capture ends here");
      return results;
    };
    auto peers = perftest_client_exchange(session, test, {me}, hooks);
    if (c.complete) {
      ASSERT_TRUE(peers.ok()) << peers.error().message;
    } else {
      ASSERT_FALSE(peers.ok());
      EXPECT_EQ(peers.error().code, ECANCELED) << peers.error().message;
    }
    ASSERT_EQ(connected.size(), 1u);
    auto real = parse_perftest(steps[4].server);
    ASSERT_TRUE(real.ok());
    EXPECT_EQ(connected[0].qpn, real->qpn);
    EXPECT_EQ(connected[0].psn, real->psn);
    EXPECT_EQ(connected[0].rkey, real->rkey);
    EXPECT_EQ(connected[0].vaddr, real->vaddr);
    EXPECT_EQ(0, std::memcmp(connected[0].gid.raw, gid_of(c.server_ip).raw, 16)) << gid_to_string(connected[0].gid);
  }
  server.join();
  EXPECT_EQ(server_error, "");
  expect_same_records(steps, sent, true);
  // Results fields, where the test has them: size, iterations, then three doubles, big-endian.
  std::vector<Bytes> results;
  for (const Bytes& b : sent)
    if (b.size() == 8) results.push_back(b);
  if (c.complete && c.verb != Verb::Send) {
    ASSERT_EQ(results.size(), 5u);
    EXPECT_EQ(be64(results[0]), 65536u);
    EXPECT_EQ(be64(results[1]), 5000u);
    EXPECT_EQ(double_from_wire(be64(results[2])), 1000.5);
    EXPECT_EQ(double_from_wire(be64(results[3])), 990.25);
  } else {
    EXPECT_TRUE(results.empty()) << "SEND bandwidth exchanges no results";
  }
}

// Our server on a dataplane (a ring port nobody listens to: the exchange is all that runs).
class ServerReplay : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    const std::string sfx = std::to_string(n++);
    auto pair = dp::make_ring_pair("orp_a" + sfx, "orp_b" + sfx);
    ASSERT_TRUE(pair.ok());
    dp::DataplaneOptions o;
    o.name = "orp" + sfx;
    o.port.name = std::to_string(pair->a);
    o.ip = rdma::IpAddress::ipv4({10, 77, 0, 2});
    o.mbufs = 2047;
    auto d = dp::Dataplane::create(o);
    ASSERT_TRUE(d.ok()) << d.error().message;
    dp_ = std::move(*d);
    dp_->set_driven_by_other_thread(true);
    poller_ = std::thread([this] {
      while (!stop_) dp_->poll_once();
    });
  }
  void TearDown() override {
    stop_ = true;
    if (poller_.joinable()) poller_.join();
  }

  // Serves one recorded client; returns what our server sent per step.
  std::vector<Bytes> serve(const std::vector<Step>& steps, proto::Ipv4Addr client_ip, SessionReport& report,
                           bool expect_ok = true, const std::function<void(ServerConfig&)>& tweak = {},
                           std::string* server_error = nullptr) {
    dp_->arp().learn(client_ip, proto::MacAddr{0x02, 0, 0, 0, 0, 3});  // the recorded peer "answers ARP"
    auto exposed = MappedBuffer::anonymous(1 << 20);
    auto recv = MappedBuffer::anonymous(1 << 16);
    EXPECT_TRUE(exposed.ok() && recv.ok());
    std::vector<Bytes> got;
    {
      Connector conn(*dp_, 99);
      auto emr = conn.register_memory(exposed->data(), exposed->size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
      auto rmr = conn.register_memory(recv->data(), recv->size(), IBV_ACCESS_LOCAL_WRITE);
      EXPECT_TRUE(emr.ok() && rmr.ok());
      DriverSet drivers(*dp_);
      ServerConfig cfg;
      cfg.exposed = LocalBuffer{exposed->data(), exposed->size(), (*emr)->lkey()};
      cfg.recv_region = LocalBuffer{recv->data(), recv->size(), (*rmr)->lkey()};
      cfg.oob_timeout_ms = 10'000;
      cfg.pingpong_idle_timeout = kSecond / 5;  // no traffic follows the replayed records
      if (tweak) tweak(cfg);
      OobServer server(conn, drivers, cfg);
      auto l = TcpListener::listen("127.0.0.1", 0);
      EXPECT_TRUE(l.ok());
      std::atomic<bool> stop{false};
      Result<SessionReport> r = make_error(EINVAL, "not run");
      std::thread srv([&] {
        auto tcp = l->accept(10'000);
        if (!tcp) return void(r = tcp.error());
        r = server.serve(*tcp, stop);
      });
      std::string error;
      {
        auto tcp = TcpStream::connect("127.0.0.1", l->port(), 5'000);
        EXPECT_TRUE(tcp.ok());
        got = play(*tcp, steps, true, error);
      }
      srv.join();
      EXPECT_EQ(error, "");
      EXPECT_EQ(r.ok(), expect_ok) << (r.ok() ? std::string("served") : r.error().message);
      if (r.ok()) report = *r;
      if (!r.ok() && server_error) *server_error = r.error().message;
      dp_->memory().deregister((*emr)->rkey());
      dp_->memory().deregister((*rmr)->rkey());
    }
    return got;
  }

  std::unique_ptr<dp::Dataplane> dp_;
  std::thread poller_;
  std::atomic<bool> stop_{false};
};

TEST_F(ServerReplay, AnswersEachRecordedPerftestClientAsTheRealServerDid) {
  for (const Capture& c : kPerftest) {
    if (!c.complete) continue;  // the server would wait for the rest of the exchange
    SCOPED_TRACE(c.fixture);
    const auto steps = load(c.fixture);
    ASSERT_GE(steps.size(), 8u);
    SessionReport report;
    const auto sent = serve(steps, c.client_ip, report);
    expect_same_records(steps, sent, false);
    EXPECT_EQ(report.tool, "perftest");
    EXPECT_EQ(report.remote_version, text(steps[0].client));
    EXPECT_EQ(report.qps, 1u);
    EXPECT_EQ(report.mtu, IBV_MTU_1024);
    // Every 108-byte record we sent names the same QP, with our address as its GID.
    std::vector<std::uint32_t> qpns;
    for (const Bytes& b : sent)
      if (b.size() == 108) {
        auto d = parse_perftest(b);
        ASSERT_TRUE(d.ok());
        qpns.push_back(d->qpn);
        EXPECT_EQ(0, std::memcmp(d->gid.raw, gid_of({10, 77, 0, 2}).raw, 16)) << gid_to_string(d->gid);
      }
    ASSERT_FALSE(qpns.empty());
    EXPECT_EQ(std::count(qpns.begin(), qpns.end(), qpns[0]), static_cast<long>(qpns.size()));
  }
}

TEST_F(ServerReplay, AResultsFieldThatLooksLikeARecordIsStillAResult) {
  // A bandwidth double whose fifth byte is ':' once made the server read it as the start of a
  // 108-byte record and wait forever (the soak found it after ~100 sessions).
  for (const Capture& c : kPerftest) {
    if (!c.complete || c.verb == Verb::Send) continue;
    SCOPED_TRACE(c.fixture);
    auto steps = load(c.fixture);
    std::size_t first_result = steps.size();
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (steps[i].client.size() == 8) {
        first_result = i;
        break;
      }
    ASSERT_LT(first_result + 2, steps.size());
    steps[first_result + 2].client[4] = std::byte{':'};  // the peak bandwidth field
    SessionReport report;
    const auto sent = serve(steps, c.client_ip, report);
    EXPECT_EQ(report.qps, 1u);
    EXPECT_EQ(std::count_if(sent.begin(), sent.end(), [](const Bytes& b) { return b.size() == 8; }), 5);
  }
}

std::size_t qps_on(dp::Dataplane& d) {
  return d.call(0, [](rdma::Engine& e) {
    std::size_t n = 0;
    e.for_each_qp([&](const rdma::QueuePair&) { ++n; });
    return n;
  });
}

TEST_F(ServerReplay, ASessionThatFailsMidwayLeavesNoQpBehind) {
  // After the QP records the client sends a broken record: the session fails, and its QP (whose
  // traffic driver points into the session) must be gone with it, not left running on the worker.
  auto steps = load("rxe_ib_write_bw");
  std::size_t cut = 0;
  while (cut < steps.size() && steps[cut].client.size() != kPerftestRecordBytes) ++cut;
  ASSERT_LT(cut, steps.size());
  steps.resize(cut + 1);
  Bytes broken(kPerftestRecordBytes, std::byte{'z'});
  for (int i = 0; i < 4; ++i) broken[static_cast<std::size_t>(i)] = std::byte{'0'};
  broken[4] = std::byte{':'};
  steps.push_back(Step{broken, {}});
  SessionReport report;
  serve(steps, {10, 77, 0, 3}, report, false);
  EXPECT_EQ(qps_on(*dp_), 0u);
}

// A perftest client's opening (version 6.06, sizes, MTU 1024) and then its QP records, as
// perftest sends them; the server's answers are read by size.
std::vector<Step> scripted_client(const std::vector<std::uint32_t>& record_qpns, const char* version = "6.06") {
  std::vector<Step> steps;
  Bytes v(16, std::byte{0});
  std::memcpy(v.data(), version, std::strlen(version));
  steps.push_back({v, Bytes(16)});
  steps.push_back({Bytes{std::byte{0}, std::byte{0}, std::byte{0x10}, std::byte{0}}, Bytes(4)});
  steps.push_back({Bytes{std::byte{0}, std::byte{0}, std::byte{0}, std::byte{0x40}}, Bytes(4)});
  steps.push_back({Bytes{std::byte{'3'}, std::byte{0}}, Bytes(2)});
  for (std::uint32_t qpn : record_qpns) {
    PerftestDest d;
    d.qpn = qpn;
    d.psn = 0x1234;
    d.gid = gid_of({10, 77, 0, 3});
    const std::string rec = format_perftest(d);
    Bytes b(rec.size());
    std::memcpy(b.data(), rec.data(), rec.size());
    steps.push_back({b, Bytes(kPerftestRecordBytes)});
  }
  return steps;
}

TEST_F(ServerReplay, AnIbWriteLatServerRefusesABandwidthTestsRecordOrder) {
  // ib_write_bw -q 2 opens with both QPs' records; ib_write_lat with QP 0's alone.
  SessionReport report;
  std::string error;
  serve(scripted_client({0x31, 0x32}), {10, 77, 0, 3}, report, false,
        [](ServerConfig& c) { c.test = ServedTest{Verb::Write, Measure::Latency, {64}, 0}; }, &error);
  EXPECT_NE(error.find("the order of a bandwidth or SEND test"), std::string::npos) << error;
  EXPECT_NE(error.find("perftest 6.06, 2 QP(s)"), std::string::npos) << error;
  EXPECT_EQ(qps_on(*dp_), 0u);
}

TEST_F(ServerReplay, AClientQuietAfterALatencyTestsRecordsIsToldWhatTheServerLacks) {
  // ib_write_lat's client waits for the server's first WRITE; a server not told the test
  // cannot know, and says so instead of waiting for ever.
  SessionReport report;
  std::string error;
  serve(scripted_client({0x31, 0x31, 0x31, 0x31}), {10, 77, 0, 3}, report, false,
        [](ServerConfig& c) { c.quiet_timeout = kSecond / 3; }, &error);
  EXPECT_NE(error.find("after a latency test's records"), std::string::npos) << error;
  EXPECT_NE(error.find("--perftest ib_write_lat"), std::string::npos) << error;
  EXPECT_EQ(qps_on(*dp_), 0u);
}

TEST_F(ServerReplay, AVersionPerftestRefusesIsRefusedAfterOursWentOut) {
  SessionReport report;
  std::string error;
  const auto sent = serve({scripted_client({}, "5.60").front()}, {10, 77, 0, 3}, report, false, {}, &error);
  EXPECT_NE(error.find("5.60"), std::string::npos) << error;
  EXPECT_NE(error.find("5.70 and newer"), std::string::npos) << error;
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(text(sent[0]), "6.06");  // as perftest: ours first, then the old client stops itself
}

TEST_F(ServerReplay, AnswersTheRecordedPingpongClientAsTheRealServerDid) {
  const auto steps = load("rxe_rc_pingpong");
  ASSERT_EQ(steps.size(), 2u);  // records, then "done" with no answer
  SessionReport report;
  const auto sent = serve(steps, {10, 77, 0, 3}, report);
  ASSERT_EQ(sent.size(), 2u);
  ASSERT_EQ(sent[0].size(), kPingpongRecordBytes);
  auto mine = parse_pingpong(sent[0]);
  ASSERT_TRUE(mine.ok()) << mine.error().message;
  EXPECT_EQ(layout(sent[0]), layout(steps[0].server));
  EXPECT_EQ(0, std::memcmp(mine->gid.raw, gid_of({10, 77, 0, 2}).raw, 16));
  EXPECT_EQ(report.tool, "ibv_rc_pingpong");
}

TEST(PingpongReplay, OurClientAcceptsTheRealServerAndSendsWhatTheRealClientSent) {
  const auto steps = load("rxe_rc_pingpong");
  ASSERT_EQ(steps.size(), 2u);
  auto l = TcpListener::listen("127.0.0.1", 0);
  ASSERT_TRUE(l.ok());
  std::vector<Bytes> sent;
  std::string server_error;
  std::thread server([&] {
    auto tcp = l->accept(10'000);
    if (!tcp) return void(server_error = tcp.error().message);
    sent = play(*tcp, steps, false, server_error);
  });
  {
    auto tcp = TcpStream::connect("127.0.0.1", l->port(), 5'000);
    ASSERT_TRUE(tcp.ok());
    PingpongDest me{0, 0x11, 0x4ae6c8, gid_of({10, 77, 0, 3})};
    auto peer = pingpong_client_exchange(*tcp, me, 10'000);
    ASSERT_TRUE(peer.ok()) << peer.error().message;
    auto real = parse_pingpong(steps[0].server);
    ASSERT_TRUE(real.ok());
    EXPECT_EQ(peer->qpn, real->qpn);
    EXPECT_EQ(peer->psn, real->psn);
    EXPECT_EQ(0, std::memcmp(peer->gid.raw, gid_of({10, 77, 0, 2}).raw, 16));
  }
  server.join();
  EXPECT_EQ(server_error, "");
  ASSERT_EQ(sent.size(), 2u);
  // Same QPN and PSN as the recorded client, so the whole record matches byte for byte.
  EXPECT_EQ(sent[0], steps[0].client) << text(sent[0]) << " vs " << text(steps[0].client);
  EXPECT_EQ(sent[1], steps[1].client);
}

INSTANTIATE_TEST_SUITE_P(Captures, OobReplay, ::testing::ValuesIn(kPerftest),
                         [](const auto& info) { return std::string(info.param.fixture); });

}  // namespace
}  // namespace roce::client::oob_replay_test
