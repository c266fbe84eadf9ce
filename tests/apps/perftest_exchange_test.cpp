// roce-gen's side of perftest's exchange against a scripted perftest 4.5 server over loopback
// TCP. The scripts are written out here from the servers' code paths in perftest's mains
// (src/*_bw.c, *_lat.c at v4.5-0.17), independently of client/oob/perftest_flow.cpp; the
// scripted server fails on any deviation (a record where a result belongs, another QP's record,
// bytes after the end). Mismatched peers must give a one-line error that names the step.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "client/perftest_client.hpp"
#include "tests/support/loopback_tcp.hpp"

namespace roce::client {
namespace {

using test::LoopbackPair;

// The server's script: R = one record per QP (read the client's, check it, answer with ours),
// F = QP 0's record alone, X = the five results fields, D = "done" (written, then the client's
// read), '.' = the server's own traffic (no socket). After the last step the client must close.
struct Script {
  std::string steps;
  unsigned qps = 1;
};

// What perftest 4.5's server does for each test (one size).
std::string server_script(Verb v, Measure m) {
  if (v == Verb::Send) return "RFRF.FD";  // ib_send_bw and ib_send_lat alike with one size
  if (m == Measure::Bandwidth) return "RRFFXFD";  // it waits in the sync while the client runs
  if (v == Verb::Write) return "FRRF.";            // writes first; never closes
  return "FRRFFD";                                 // ib_read_lat, ib_atomic_lat close at once
}

PerftestDest server_record(unsigned i) {
  PerftestDest d;
  d.qpn = 0x100 + i;
  d.psn = 0x5000 + i;
  d.rkey = 0x77;
  d.vaddr = 0x7f0000000000ull + i * 0x10000;
  d.gid.raw[10] = d.gid.raw[11] = 0xFF;
  d.gid.raw[15] = 2;
  return d;
}

PerftestDest client_record(unsigned i) {
  PerftestDest d = server_record(i);
  d.qpn = 0x200 + i;
  d.gid.raw[15] = 3;
  return d;
}

// Plays perftest's server; returns "" or what went wrong.
std::string play_server(TcpStream& tcp, const Script& sc, const char* version = "6.06", std::uint64_t expect_size = 0) {
  auto swap = [&](std::span<std::byte> in, std::span<const std::byte> out) -> std::string {
    if (Status s = tcp.read_exact(in, 3000); !s) return s.error().message;
    if (Status s = tcp.write_all(out); !s) return s.error().message;
    return "";
  };
  std::array<std::byte, 16> ver_in{}, ver_out{};
  std::strncpy(reinterpret_cast<char*>(ver_out.data()), version, 15);
  if (auto e = swap(ver_in, ver_out); !e.empty()) return "version: " + e;
  if (compare_versions(version, "5.70") < 0) return "";  // perftest stops here
  for (std::uint32_t v : {4096u, 64u}) {  // cycle buffer, cache line
    std::array<std::byte, 4> in{}, out{};
    out[2] = std::byte(v >> 8);
    out[3] = std::byte(v & 0xFF);
    if (auto e = swap(in, out); !e.empty()) return "sizes: " + e;
  }
  std::array<std::byte, 2> mtu_in{}, mtu_out{std::byte{'3'}, std::byte{0}};
  if (auto e = swap(mtu_in, mtu_out); !e.empty()) return "mtu: " + e;
  auto record = [&](unsigned i, const std::string& where) -> std::string {
    std::array<std::byte, kPerftestRecordBytes> in{};
    const std::string out = format_perftest(server_record(i));
    if (auto e = swap(in, std::as_bytes(std::span{out})); !e.empty()) return where + ": " + e;
    auto d = parse_perftest(in);
    if (!d) return where + ": not a record: " + d.error().message;
    if (d->qpn != client_record(i).qpn) return where + ": the record of QP " + std::to_string(d->qpn - 0x200) + ", not " + std::to_string(i);
    return "";
  };
  int n = 0;
  for (char c : sc.steps) {
    const std::string where = std::string("step ") + std::to_string(n++) + " '" + c + "'";
    if (c == 'R') {
      for (unsigned i = 0; i < sc.qps; ++i)
        if (auto e = record(i, where); !e.empty()) return e;
    } else if (c == 'F') {
      if (auto e = record(0, where); !e.empty()) return e;
    } else if (c == 'X') {
      for (int f = 0; f < 5; ++f) {
        std::array<std::byte, 8> in{}, out{};
        if (auto e = swap(in, out); !e.empty()) return where + ": " + e;
        if (f == 0 && expect_size) {
          std::uint64_t size = 0;
          for (std::byte b : in) size = size << 8 | std::to_integer<std::uint64_t>(b);
          if (size != expect_size) return where + ": results size " + std::to_string(size);
        }
      }
    } else if (c == 'D') {
      static constexpr char kDone[5] = {'d', 'o', 'n', 'e', '\0'};
      if (Status s = tcp.write_all(std::as_bytes(std::span{kDone})); !s) return where + ": " + s.error().message;
      std::array<std::byte, 5> in{};
      if (Status s = tcp.read_exact(in, 3000); !s) return where + ": " + s.error().message;
      if (std::memcmp(in.data(), kDone, 5) != 0) return where + ": not \"done\"";
    }
  }
  std::array<std::byte, 1> extra{};
  if (!tcp.read_exact(extra, 3000)) return "";
  // A server that ends in its own traffic (ib_write_lat's polls its memory) answers nothing
  // more; its socket stays open until the client gives up.
  if (!sc.steps.empty() && sc.steps.back() == '.')
    while (tcp.read_exact(extra, 10'000)) {
    }
  return "the client sent more after the end";
}

struct ClientOutcome {
  Result<std::vector<PerftestDest>> peers = make_error(EINVAL, "not run");
  std::vector<PerftestDest> connected;
  unsigned traffic = 0;
};

struct RunMode {
  bool duplex = false;    // -b
  bool infinite = false;  // --run_infinitely (the traffic hook returns as a stop signal would end it)
};

ClientOutcome run_client(TcpStream& tcp, Verb v, Measure m, unsigned qps, std::uint32_t sizes = 1, int timeout_ms = 3000,
                         RunMode mode = {}) {
  ClientOutcome out;
  PerftestSession s(tcp, OobRole::Client, timeout_ms);
  auto mtu = perftest_client_preamble(s, IBV_MTU_1024);
  if (!mtu) {
    out.peers = mtu.error();
    return out;
  }
  PerftestTest t;
  t.verb = v;
  t.measure = m;
  t.sizes = sizes;
  t.all_sizes = sizes > 1;
  t.duplex = mode.duplex;
  t.infinite = mode.infinite;
  t.duration = mode.infinite;
  std::vector<PerftestDest> mine;
  for (unsigned i = 0; i < qps; ++i) mine.push_back(client_record(i));
  ClientHooks hooks;
  hooks.connect = [&](const std::vector<PerftestDest>& p) {
    out.connected = p;
    return Status{};
  };
  hooks.traffic = [&](std::uint32_t) -> Result<PerftestResults> {
    ++out.traffic;
    return PerftestResults{4096, 16, 1.5, 1.25, 0.5};
  };
  out.peers = perftest_client_exchange(s, t, mine, hooks);
  return out;
}

TEST(PerftestExchange, EveryTestWithOneToEightQpsRunsPerftestsServerScriptToTheEnd) {
  for (Verb v : {Verb::Write, Verb::Read, Verb::Send, Verb::Atomic})
    for (Measure m : {Measure::Bandwidth, Measure::Latency})
      for (unsigned qps : {1u, 2u, 4u, 8u}) {
        if (m == Measure::Latency && qps > 1) continue;  // perftest's latency tests refuse -q
        SCOPED_TRACE(perftest_program(v, m) + " -q " + std::to_string(qps));
        LoopbackPair p;
        std::string server_error;
        std::thread srv([&] {
          server_error = play_server(p.server, Script{server_script(v, m), qps}, "6.06", m == Measure::Bandwidth ? 4096 : 0);
        });
        ClientOutcome c = run_client(p.client, v, m, qps);
        p.client = TcpStream();  // ib_write_lat's client just closes
        srv.join();
        ASSERT_TRUE(c.peers.ok()) << c.peers.error().message;
        EXPECT_EQ(server_error, "");
        ASSERT_EQ(c.connected.size(), qps);
        for (unsigned i = 0; i < qps; ++i) EXPECT_EQ(c.connected[i].qpn, server_record(i).qpn);
        EXPECT_EQ(c.traffic, 1u);
      }
}

TEST(PerftestExchange, SweepsSyncPerSizeOnlyInSendTests) {
  struct Case {
    Verb v;
    Measure m;
    const char* script;
  };
  // -a with 3 sizes: send_bw syncs before and after each size, send_lat before; the RDMA tests
  // run their sizes back to back.
  for (const Case& k : {Case{Verb::Send, Measure::Bandwidth, "RFRF.FF.FF.FFD"}, Case{Verb::Send, Measure::Latency, "RFRF.F.F.FD"},
                        Case{Verb::Write, Measure::Bandwidth, "RRFFXFD"}, Case{Verb::Read, Measure::Latency, "FRRFFD"},
                        Case{Verb::Write, Measure::Latency, "FRRF."}}) {
    SCOPED_TRACE(perftest_program(k.v, k.m));
    LoopbackPair p;
    std::string server_error;
    const unsigned qps = k.m == Measure::Latency ? 1 : 2;
    std::thread srv([&] { server_error = play_server(p.server, Script{k.script, qps}); });
    ClientOutcome c = run_client(p.client, k.v, k.m, qps, 3);
    p.client = TcpStream();
    srv.join();
    ASSERT_TRUE(c.peers.ok()) << c.peers.error().message;
    EXPECT_EQ(server_error, "");
    EXPECT_EQ(c.traffic, 3u);
  }
}

// --run_infinitely, once the client is stopped: a one-way RDMA server still waits in its
// closing sync and gets the results and "done"; a -b server and a SEND server post for ever
// (perftest's run_iter_bw_infinitely*), so the client asks them nothing more and closes.
TEST(PerftestExchange, RunInfinitelyEndsWhereTheServerStillListens) {
  struct Case {
    Verb v;
    bool duplex;
    const char* script;
  };
  for (const Case& k : {Case{Verb::Write, false, "RRFFXFD"}, Case{Verb::Read, false, "RRFFXFD"},
                        Case{Verb::Atomic, false, "RRFFXFD"}, Case{Verb::Write, true, "RRF."},
                        Case{Verb::Read, true, "RRF."}, Case{Verb::Send, false, "RFRF."}}) {
    SCOPED_TRACE(perftest_program(k.v, Measure::Bandwidth) + (k.duplex ? " -b" : ""));
    LoopbackPair p;
    std::string server_error;
    std::thread srv([&] { server_error = play_server(p.server, Script{k.script, 2}); });
    ClientOutcome c = run_client(p.client, k.v, Measure::Bandwidth, 2, 1, 3000, RunMode{k.duplex, true});
    p.client = TcpStream();
    srv.join();
    ASSERT_TRUE(c.peers.ok()) << c.peers.error().message;
    EXPECT_EQ(server_error, "");
    EXPECT_EQ(c.traffic, 1u);
  }
}

// A mismatched server must end in an error that says where, not in a hang.
struct Mismatch {
  Verb v;
  Measure m;
  unsigned client_qps;
  std::string server_steps;
  unsigned server_qps;
  std::vector<std::string> words;  // all in the client's error
};

TEST(PerftestExchange, AServerOnAnotherQpCountOrTestIsAOneLineErrorNamingTheStep) {
  const Mismatch cases[] = {
      // ib_read_bw -q 4 against a -q 2 server: the 2nd round names QP 0x100 again for QP 2.
      {Verb::Read, Measure::Bandwidth, 4, "RRFFXFD", 2, {"ib_read_bw exchange went astray", "1st round", "fewer QPs"}},
      // -q 2 against a -q 4 server: the server's 2nd round starts with its QPs 2 and 3.
      {Verb::Write, Measure::Bandwidth, 2, "RRFFXFD", 4, {"went astray", "QP 0's record in the 2nd round", "0x102"}},
      // ib_write_bw against ib_write_lat's server: after the traffic that server writes and
      // waits, and our results go unanswered.
      {Verb::Write, Measure::Bandwidth, 1, "FRRF.", 1, {"ib_write_bw exchange failed at the results (after the traffic)", "still in a test of its own"}},
  };
  // (With one QP some pairs agree on every byte of the exchange, ib_send_lat against
  // ib_read_lat's server for one: there the traffic tells, see perftest_loop_test.)
  for (const Mismatch& k : cases) {
    SCOPED_TRACE(perftest_program(k.v, k.m) + " -q " + std::to_string(k.client_qps) + " vs " + k.server_steps + " -q " +
                 std::to_string(k.server_qps));
    LoopbackPair p;
    std::thread srv([&] {
      (void)play_server(p.server, Script{k.server_steps, k.server_qps});
      p.server = TcpStream();  // perftest exits
    });
    const auto t0 = std::chrono::steady_clock::now();
    ClientOutcome c = run_client(p.client, k.v, k.m, k.client_qps, 1, 1000);
    p.client = TcpStream();
    srv.join();
    ASSERT_FALSE(c.peers.ok());
    const std::string& msg = c.peers.error().message;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (const auto& w : k.words) EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' not in: " << msg;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8)) << msg;
  }
}

TEST(PerftestExchange, APeerThatLeavesMidwayIsNamedWithItsStep) {
  LoopbackPair p;
  std::thread srv([&] {
    (void)play_server(p.server, Script{"R", 1});  // one round, then gone (perftest printed why)
    p.server = TcpStream();
  });
  ClientOutcome c = run_client(p.client, Verb::Write, Measure::Bandwidth, 1);
  srv.join();
  ASSERT_FALSE(c.peers.ok());
  const std::string& msg = c.peers.error().message;
  EXPECT_NE(msg.find("QP 0's record in the 2nd round of QP records (before the traffic)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the server ended the exchange there"), std::string::npos) << msg;
}

TEST(PerftestExchange, VersionsPerftestRefusesAreRefusedWithTheReason) {
  for (const char* v : {"5.60", "4.5", "garbage"}) {
    SCOPED_TRACE(v);
    LoopbackPair p;
    std::thread srv([&] {
      (void)play_server(p.server, Script{"", 1}, v);
      p.server = TcpStream();
    });
    ClientOutcome c = run_client(p.client, Verb::Write, Measure::Bandwidth, 1);
    srv.join();
    ASSERT_FALSE(c.peers.ok());
    const std::string& msg = c.peers.error().message;
    EXPECT_NE(msg.find(std::string(v) == "garbage" ? "no perftest version" : "5.70 and newer"), std::string::npos) << msg;
  }
  // Newer perftest keeps the old exchange with a 6.06 peer.
  LoopbackPair p;
  std::string server_error;
  std::thread srv([&] { server_error = play_server(p.server, Script{"RRFFXFD", 1}, "6.29"); });
  ClientOutcome c = run_client(p.client, Verb::Write, Measure::Bandwidth, 1);
  p.client = TcpStream();
  srv.join();
  EXPECT_TRUE(c.peers.ok()) << c.peers.error().message;
  EXPECT_EQ(server_error, "");
}

}  // namespace
}  // namespace roce::client
