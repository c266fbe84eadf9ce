// roce-gen's command line in process: every perftest flag with perftest's defaults, ranges and
// messages (tests/apps/fixtures/perftest_output/refused.txt has what perftest itself says), the
// dependencies perftest's parser enforces between them, and how they reach the QP and the run.
#include <gtest/gtest.h>

#include "apps/gen/options.hpp"
#include "apps/gen/perftest_printout.hpp"

// The flags are given as designated initializers naming only the flags a case passes; the rest
// are "not given" by their default member initializers, which is what -Wextra would flag.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace roce::client {
namespace {

constexpr std::uint32_t kMaxReads = 16;

Result<PerftestFlags> flags(Verb v, Measure m, PerftestFlagText t) { return resolve_perftest_flags(v, m, t, kMaxReads); }

PerftestFlags ok(Verb v, Measure m, PerftestFlagText t = {}) {
  auto f = flags(v, m, t);
  EXPECT_TRUE(f.ok()) << f.error().message;
  return f.ok() ? *f : PerftestFlags{};
}

std::string refused(Verb v, Measure m, PerftestFlagText t) {
  auto f = flags(v, m, t);
  EXPECT_FALSE(f.ok());
  return f.ok() ? "" : f.error().message;
}

constexpr Measure kBw = Measure::Bandwidth;
constexpr Measure kLat = Measure::Latency;

TEST(PerftestFlags, DefaultsArePerftestsForEachTest) {
  PerftestFlags f = ok(Verb::Write, kBw);
  EXPECT_EQ(f.size, 65536u);
  EXPECT_EQ(f.iters, 5000u);
  EXPECT_EQ(f.tx_depth, 128u);
  EXPECT_EQ(f.cq_mod, 1u) << "above 8 KiB perftest signals every send";
  EXPECT_EQ(f.rx_depth, 1u);
  EXPECT_EQ(f.inline_size, 0u);
  EXPECT_EQ(f.out_reads, 1u);
  EXPECT_EQ(f.qps, 1u);
  EXPECT_EQ(f.gid_index, 0);
  EXPECT_FALSE(f.no_peak);
  EXPECT_EQ(f.output, PerftestOutput::Full);
  EXPECT_TRUE(f.notes.empty());

  f = ok(Verb::Read, kBw);
  EXPECT_EQ(f.iters, 1000u);
  EXPECT_EQ(f.out_reads, kMaxReads) << "the device's maximum";
  f = ok(Verb::Send, kBw);
  EXPECT_EQ(f.rx_depth, 512u);
  f = ok(Verb::Send, kBw, {.size = "4096"});
  EXPECT_EQ(f.cq_mod, 100u);
  f = ok(Verb::Atomic, kBw);
  EXPECT_EQ(f.size, 8u);
  EXPECT_EQ(f.cq_mod, 100u);

  f = ok(Verb::Write, kLat);
  EXPECT_EQ(f.size, 2u);
  EXPECT_EQ(f.iters, 1000u);
  EXPECT_EQ(f.tx_depth, 1u);
  EXPECT_EQ(f.cq_mod, 1u) << "never above the TX depth";
  EXPECT_EQ(f.inline_size, 220u) << "perftest's inline default for WRITE latency";
  EXPECT_EQ(ok(Verb::Send, kLat).inline_size, 236u);
  EXPECT_EQ(ok(Verb::Read, kLat).inline_size, 0u);
  EXPECT_EQ(ok(Verb::Atomic, kLat).size, 8u);
}

struct Bad {
  Verb verb;
  Measure measure;
  PerftestFlagText text;
  const char* message;
};

TEST(PerftestFlags, BadValuesGetPerftestsMessages) {
  const Bad cases[] = {
      {Verb::Write, kBw, {.size = "0"}, "-s 0: Message Size should be between 1 and 2147483647"},
      {Verb::Write, kBw, {.size = "2048M"}, "-s 2048M: Message Size should be between 1 and 2147483647"},
      {Verb::Write, kBw, {.size = "12Q"}, "Message Size should be between"},
      {Verb::Atomic, kBw, {.size = "16"}, "-s 16: Message size cannot be changed for Atomic tests"},
      {Verb::Write, kBw, {.iters = "4"}, "-n 4: Iteration num should be between 5 and 100000000"},
      {Verb::Write, kBw, {.iters = "100000001"}, "Iteration num should be between 5 and 100000000"},
      {Verb::Write, kBw, {.iters = "lots"}, "-n lots: Iteration num argument lots should be int"},
      {Verb::Write, kBw, {.tx_depth = "0"}, "-t 0: Tx depth should be between 1 and 15000"},
      {Verb::Write, kBw, {.tx_depth = "15001"}, "Tx depth should be between 1 and 15000"},
      {Verb::Write, kBw, {.tx_depth = "x"}, "-t x: Tx depth argument x should be int"},
      {Verb::Send, kBw, {.rx_depth = "0"}, "-r 0: Rx depth should be between 1 and 16384"},
      {Verb::Write, kBw, {.rx_depth = "2"}, "-r 2: On RDMA verbs rx depth can be only 1"},
      {Verb::Write, kBw, {.qps = "0"}, "-q 0: num of Qps should be between 1 and 16384"},
      {Verb::Write, kBw, {.qps = "16385"}, "num of Qps should be between 1 and 16384"},
      {Verb::Write, kLat, {.qps = "2"}, "-q 2: Multiple QPs only available on bw tests"},
      {Verb::Write, kBw, {.cq_mod = "0"}, "-Q 0: CQ moderation should be between 1 and 1024"},
      {Verb::Write, kBw, {.cq_mod = "1025"}, "CQ moderation should be between 1 and 1024"},
      {Verb::Write, kBw, {.post_list = "0"}, "-l 0: Send Post List size must be positive"},
      {Verb::Write, kBw, {.iters = "10", .post_list = "3"}, "-l 3: Number of iterations must be a multiple of post list size"},
      {Verb::Write, kBw, {.iters = "600", .cq_mod = "4", .post_list = "6"}, "-l 6: Post list size must be a multiple of CQ moderation"},
      {Verb::Write, kBw, {.iters = "160", .tx_depth = "8", .post_list = "16"}, "never fits"},
      {Verb::Write, kLat, {.post_list = "2"}, "-l 2: Post list is supported in BW tests only"},
      {Verb::Write, kBw, {.inline_size = "913"}, "-I 913: Max inline should be between 0 and 912"},
      {Verb::Read, kBw, {.inline_size = "64"}, "-I 64: Inline feature not available on READ/Atomic verbs"},
      {Verb::Atomic, kBw, {.inline_size = "8"}, "Inline feature not available on READ/Atomic verbs"},
      {Verb::Write, kBw, {.out_reads = "4"}, "-o 4: Setting Outstanding reads only available on READ verb"},
      {Verb::Read, kBw, {.out_reads = "four"}, "-o four: Outstanding Reads argument four should be int"},
      {Verb::Write, kBw, {.duration = "0"}, "-D 0: Duration period must be positive"},
      {Verb::Write, kBw, {.duration = "-3"}, "Duration period must be positive"},
      {Verb::Write, kBw, {.duration = "soon"}, "should be a number of seconds"},
      {Verb::Write, kBw, {.duration = "4", .margin = "2"}, "-f 2: please check that DURATION > 2*MARGIN"},
      {Verb::Write, kBw, {.margin = "-1"}, "-f -1: Margin must be non-negative"},
      {Verb::Write, kBw, {.duration = "2", .all = true}, "Duration mode currently doesn't support running on all sizes."},
      {Verb::Read, kBw, {.duration = "2", .events = true}, "Duration mode doesn't work with events."},
      {Verb::Write, kBw, {.events = true}, "-e: Events feature not available on WRITE verb"},
      {Verb::Read, kLat, {.bidirectional = true}, "-b: Bidirectional is only available in BW test"},
      {Verb::Read, kLat, {.no_peak = true}, "-N: NoPeak only valid for BW tests"},
      {Verb::Read, kLat, {.run_infinitely = true}, "run_infinitely exists only in BW tests for now."},
      {Verb::Read, kBw, {.events = true, .run_infinitely = true}, "run_infinitely does not support events feature yet."},
      {Verb::Send, kBw, {.bidirectional = true, .run_infinitely = true}, "not supported in SEND Bidirectional BW test"},
      {Verb::Write, kBw, {.gid_index = "65"}, "-x 65: Gid index should be between 0 and 64"},
      {Verb::Write, kBw, {.ib_port = "0"}, "-i 0: IB Port can't be less than 1"},
      {Verb::Write, kBw, {.ib_port = "2"}, "-i 2: this device has one port"},
      {Verb::Write, kBw, {.tos = "256"}, "-T 256: TOS should be between 0 and 255"},
      {Verb::Write, kBw, {.tclass = "-1"}, "--tclass=-1: traffic class should be between 0 and 255"},
      {Verb::Write, kBw, {.output = "fast"}, "--output=fast: Invalid verbosity level output flag. Please use bandwidth, latency, message_rate"},
      {Verb::Write, kBw, {.output = "latency"}, "Output verbosity level for BW can be: bandwidth, message_rate"},
      {Verb::Write, kLat, {.output = "bandwidth"}, "Output verbosity level for LAT can be: latency"},
  };
  for (const Bad& b : cases) {
    const std::string got = refused(b.verb, b.measure, b.text);
    EXPECT_NE(got.find(b.message), std::string::npos) << "want: " << b.message << "\n got: " << got;
  }
}

TEST(PerftestFlags, ValuesAreTakenAsPerftestTakesThem) {
  PerftestFlags f = ok(Verb::Write, kBw, {.size = "64K", .iters = "0x20", .tx_depth = "010", .qps = "8"});
  EXPECT_EQ(f.size, 65536u);
  EXPECT_EQ(f.iters, 32u) << "C integers: 0x hex";
  EXPECT_EQ(f.tx_depth, 8u) << "and 0 octal";
  EXPECT_EQ(f.qps, 8u);
  EXPECT_EQ(ok(Verb::Write, kBw, {.size = "1M"}).size, 1u << 20);
  EXPECT_EQ(ok(Verb::Write, kBw, {.size = "8M"}).size, 8u << 20);
  EXPECT_EQ(ok(Verb::Write, kBw, {.size = "1"}).size, 1u);
  f = ok(Verb::Send, kBw, {.size = "64", .rx_depth = "33", .cq_mod = "10", .inline_size = "128"});
  EXPECT_EQ(f.rx_depth, 34u) << "perftest makes an odd SEND rx depth even";
  EXPECT_EQ(f.cq_mod, 10u);
  EXPECT_EQ(f.inline_size, 128u);
  f = ok(Verb::Write, kBw, {.tos = "0x62"});
  ASSERT_TRUE(f.traffic_class);
  EXPECT_EQ(*f.traffic_class, 0x62);
  EXPECT_EQ(*ok(Verb::Write, kBw, {.tclass = "96"}).traffic_class, 96);
  EXPECT_FALSE(ok(Verb::Write, kBw).traffic_class);
  EXPECT_EQ(ok(Verb::Write, kBw, {.output = "message_rate"}).output, PerftestOutput::MessageRate);
  EXPECT_EQ(ok(Verb::Read, kLat, {.output = "latency"}).output, PerftestOutput::Latency);
  EXPECT_EQ(ok(Verb::Write, kBw, {.gid_index = "3"}).gid_index, 3);
  f = ok(Verb::Read, kBw, {.bidirectional = true, .events = true, .mr_per_qp = true, .no_peak = true});
  EXPECT_TRUE(f.bidirectional && f.events && f.mr_per_qp && f.no_peak);
  EXPECT_TRUE(ok(Verb::Write, kBw, {.gbits = true}).gbits);
  EXPECT_TRUE(ok(Verb::Write, kBw, {.all = true}).all);
}

TEST(PerftestFlags, DependenciesFollowPerftestsParser) {
  PerftestFlags f = ok(Verb::Write, kBw, {.iters = "20"});
  EXPECT_EQ(f.tx_depth, 20u) << "no deeper than the iterations";
  f = ok(Verb::Send, kBw, {.size = "64", .iters = "100"});
  EXPECT_EQ(f.rx_depth, 100u);
  EXPECT_EQ(f.cq_mod, 100u);
  f = ok(Verb::Write, kBw, {.size = "64", .tx_depth = "32"});
  EXPECT_EQ(f.cq_mod, 32u) << "no more than the TX depth";
  f = ok(Verb::Write, kBw, {.size = "65536", .cq_mod = "16"});
  EXPECT_EQ(f.cq_mod, 16u) << "asked for: kept above 8 KiB";
  f = ok(Verb::Write, kBw, {.size = "65536", .all = true});
  EXPECT_EQ(f.cq_mod, 100u) << "-a keeps moderation (perftest does not change it per size)";
  f = ok(Verb::Write, kBw, {.iters = "200", .post_list = "4"});
  EXPECT_EQ(f.cq_mod, 4u);
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_EQ(f.notes[0], "Post List requested - CQ moderation will be the size of the post list");
  f = ok(Verb::Write, kBw, {.iters = "200", .cq_mod = "2", .post_list = "4"});
  EXPECT_EQ(f.cq_mod, 2u);
  EXPECT_FALSE(ok(Verb::Write, kBw, {.iters = "20000"}).no_peak);
  EXPECT_TRUE(ok(Verb::Write, kBw, {.iters = "20001"}).no_peak) << "perftest drops the peak above 20000";

  f = ok(Verb::Write, kBw, {.duration = "10"});
  EXPECT_DOUBLE_EQ(f.duration_s, 10);
  EXPECT_DOUBLE_EQ(f.margin_s, 2) << "a quarter of the whole seconds";
  EXPECT_TRUE(f.no_peak);
  EXPECT_EQ(f.tx_depth, 128u) << "-D: not bounded by -n";
  EXPECT_DOUBLE_EQ(ok(Verb::Write, kBw, {.duration = "2.5"}).margin_s, 0);
  EXPECT_DOUBLE_EQ(ok(Verb::Write, kBw, {.duration = "10", .margin = "1.5"}).margin_s, 1.5);
  f = ok(Verb::Write, kBw, {.run_infinitely = true});
  EXPECT_TRUE(f.run_infinitely && f.no_peak);
  EXPECT_DOUBLE_EQ(f.duration_s, 5) << "perftest's DEF_DURATION: a row every 5 s";
  EXPECT_DOUBLE_EQ(ok(Verb::Write, kBw, {.duration = "2", .run_infinitely = true}).duration_s, 2);

  f = ok(Verb::Write, kBw, {.cpu_util = true});
  EXPECT_FALSE(f.cpu_util);
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("CPU Utilization works only with Duration mode."), std::string::npos);
  EXPECT_TRUE(ok(Verb::Write, kBw, {.duration = "3", .cpu_util = true}).cpu_util);

  f = ok(Verb::Read, kBw, {.out_reads = "4"});
  EXPECT_EQ(f.out_reads, 4u);
  f = ok(Verb::Read, kBw, {.out_reads = "64"});
  EXPECT_EQ(f.out_reads, kMaxReads);
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("above max = 16"), std::string::npos);
  EXPECT_EQ(ok(Verb::Atomic, kBw, {.out_reads = "0"}).out_reads, kMaxReads);
  EXPECT_EQ(ok(Verb::Read, kBw, {.out_reads = "4"}).inline_size, 0u);
}

TEST(PerftestFlags, DeviceFlagsAreAcceptedWithANoteEach) {
  const PerftestFlags f =
      ok(Verb::Read, kBw, {.ib_dev = "mlx5_0", .ib_port = "1", .gid_index = "3", .events = true, .cpu_freq = true, .ipv6 = true});
  ASSERT_EQ(f.notes.size(), 6u);
  for (const char* w : {"-x 3: the GID is --ip's", "-i 1: port 1 is the DPDK port", "-d mlx5_0: ignored", "-F: nothing to check",
                        "-e: completions are polled", "--ipv6: the GID and rdma_cm's addresses are --ip's"})
    EXPECT_TRUE(std::any_of(f.notes.begin(), f.notes.end(), [&](const std::string& n) { return n.find(w) == 0; })) << w;
}

std::vector<std::string> cmd(std::vector<std::string> extra) {
  std::vector<std::string> a{"roce-gen"};
  a.insert(a.end(), extra.begin(), extra.end());
  for (const char* s : {"--dev", "net_null0", "--ip", "10.0.0.1"}) a.push_back(s);
  return a;
}

TEST(GenOptions, PerftestProgramNamesAndTheServerLastAsPerftestTakesIt) {
  auto g = parse_gen_options(cmd({"ib_read_lat", "-n", "100", "10.0.0.2"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->spec.verb, Verb::Read);
  EXPECT_EQ(g->spec.measure, Measure::Latency);
  EXPECT_EQ(g->server, "10.0.0.2");
  EXPECT_EQ(g->spec.iters, 100u);
  g = parse_gen_options(cmd({"ib_send_bw", "--server", "10.0.0.2"}));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->spec.measure, Measure::Bandwidth);
  EXPECT_EQ(parse_gen_options(cmd({"ib_send_bw", "--lat", "10.0.0.2"})).error().message, "ib_send_bw and --lat exclude each other");
  EXPECT_EQ(parse_gen_options(cmd({"write", "--server", "10.0.0.2", "10.0.0.3"})).error().message,
            "two servers: --server 10.0.0.2 and 10.0.0.3");
  EXPECT_NE(parse_gen_options(cmd({"ib_write_xx", "10.0.0.2"})).error().message.find("unknown test 'ib_write_xx'"), std::string::npos);
}

// IBTA 1.5's ATOMIC_WRITE and FLUSH: tests of their own, READ's rules for -o and -I, and
// ATOMIC_WRITE's 8 bytes as an atomic's.
TEST(GenOptions, AtomicWriteAndFlushAreTestsWithReadsRules) {
  auto g = parse_gen_options(cmd({"atomic_write", "-n", "100", "10.0.0.2"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->spec.verb, Verb::AtomicWrite);
  EXPECT_EQ(g->spec.size, 8u);
  EXPECT_EQ(op_bytes(g->spec), 8u);
  g = parse_gen_options(cmd({"flush", "-s", "4096", "-o", "4", "10.0.0.2"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->spec.verb, Verb::Flush);
  EXPECT_EQ(op_bytes(g->spec), 4096u);
  EXPECT_EQ(g->perftest.out_reads, 4u);
  EXPECT_NE(refused(Verb::AtomicWrite, kBw, {.size = "64"}).find("Message size cannot be changed"), std::string::npos);
  EXPECT_NE(refused(Verb::Flush, kBw, {.inline_size = "64"}).find("Inline feature not available"), std::string::npos);
  EXPECT_NE(parse_gen_options(cmd({"flush", "-c", "UC", "10.0.0.2"})).error().message.find("-c UC"), std::string::npos);
}

TEST(GenOptions, FlagsReachTheQueuePairsAndTheRun) {
  auto g = parse_gen_options(cmd({"write", "-s", "256", "-n", "400", "-t", "64", "-Q", "8", "-l", "8", "-I", "256", "-T",
                                  "0x62", "--qp", "4", "--port", "18600", "--mr_per_qp", "-m", "4096", "10.0.0.2"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->perftest.qps, 4u);
  EXPECT_EQ(g->oob_port, 18600);
  EXPECT_TRUE(g->perftest.mr_per_qp);
  EXPECT_EQ(g->spec.size, 256u);
  EXPECT_EQ(g->spec.iters, 400u);
  EXPECT_EQ(g->spec.tx_depth, 64u);
  EXPECT_EQ(g->spec.cq_mod, 8u);
  EXPECT_EQ(g->spec.post_list, 8u);
  EXPECT_EQ(g->spec.inline_size, 256u);
  EXPECT_TRUE(g->spec.record_peak);
  EXPECT_EQ(g->qp.max_inline, 256u);
  EXPECT_EQ(g->qp.traffic_class, 0x62);
  EXPECT_EQ(g->qp.send_depth, 80u);
  EXPECT_EQ(g->qp.mtu, IBV_MTU_4096);
  g = parse_gen_options(cmd({"read", "-o", "4", "-D", "8", "10.0.0.2"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->qp.max_rd_atomic, 4);
  EXPECT_EQ(g->spec.duration, 8 * kSecond);
  EXPECT_EQ(g->spec.margin, 2 * kSecond);
  EXPECT_FALSE(g->spec.record_peak);
  g = parse_gen_options(cmd({"write", "-a", "10.0.0.2"}));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->spec.size, 8u << 20) << "-a: buffers for the largest size";
}

TEST(GenOptions, BidirectionalRunsWhereTheClientTakesTheServersOperations) {
  auto g = parse_gen_options(cmd({"write", "-b", "10.0.0.2"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_TRUE(g->perftest.bidirectional);
  EXPECT_TRUE(client_options_of(*g).duplex);
  EXPECT_TRUE(parse_gen_options(cmd({"ib_read_bw", "-b", "10.0.0.2"})).ok());
  g = parse_gen_options(cmd({"send", "-b", "-c", "UC", "10.0.0.2"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_TRUE(client_options_of(*g).duplex);
  EXPECT_GE(g->qp.recv_depth, 512u) << "SEND -b posts -r receives";
  // perftest 4.5 takes SEND -b over UD too (its parser refuses -b only with multicast, flows,
  // DC/XRC, latency under load and SEND's --run_infinitely).
  g = parse_gen_options(cmd({"send", "-b", "-c", "UD", "10.0.0.2"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_TRUE(client_options_of(*g).duplex);
  EXPECT_EQ(parse_gen_options(cmd({"write", "-b", "--listen"})).error().message,
            "-b: roce-gen --listen serves unidirectional tests only");
}

// perftest's --use-srq: SEND tests only, never more QPs than the SRQ's depth (-r, after -n's
// bound), as perftest's force_dependecies says; it reaches the client, the server and the header.
TEST(GenOptions, UseSrqIsForSendTestsWithAnSrqDeepEnoughForTheQps) {
  EXPECT_NE(refused(Verb::Write, kBw, {.use_srq = true}).find("--use-srq: Using SRQ only avavilible in SEND tests."),
            std::string::npos);
  EXPECT_NE(refused(Verb::Send, kBw, {.rx_depth = "4", .qps = "8", .use_srq = true})
                .find("Using SRQ depth should be greater than number of QPs."),
            std::string::npos);
  EXPECT_NE(refused(Verb::Send, kBw, {.iters = "5", .qps = "8", .use_srq = true}).find("greater than number of QPs"),
            std::string::npos)
      << "-r is bounded by -n first";
  EXPECT_TRUE(ok(Verb::Send, kLat, {.use_srq = true}).use_srq);
  auto g = parse_gen_options(cmd({"send", "-b", "--use-srq", "-q", "4", "10.0.0.2"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_TRUE(client_options_of(*g).use_srq);
  EXPECT_NE(perftest_header(client_header_of(*g, ClientConnection{})).find("Using SRQ      : ON"), std::string::npos);
  g = parse_gen_options(cmd({"send", "10.0.0.2"}));
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(client_options_of(*g).use_srq);
  EXPECT_NE(perftest_header(client_header_of(*g, ClientConnection{})).find("Using SRQ      : OFF"), std::string::npos);
}

TEST(GenOptions, PingpongKeepsIbvRcPingpongsDefaults) {
  auto g = parse_gen_options(cmd({"pingpong", "10.0.0.2"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->spec.size, 4096u);
  EXPECT_EQ(g->spec.iters, 1000u);
  g = parse_gen_options(cmd({"ud-pingpong", "-n", "3", "10.0.0.2"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->spec.size, 1024u);
  EXPECT_EQ(g->spec.iters, 3u) << "not perftest: no minimum of 5";
  EXPECT_FALSE(parse_gen_options(cmd({"pingpong", "-n", "0", "10.0.0.2"})).ok());
}

TEST(GenOptions, JsonIsSeenBeforeParsing) {
  EXPECT_TRUE(json_requested({"roce-gen", "write", "--json", "-t", "0"}));
  EXPECT_FALSE(json_requested({"roce-gen", "write"}));
  EXPECT_FALSE(json_requested({"--json"})) << "argv[0] is the program";
  EXPECT_FALSE(json_requested({}));
}

// --line-rate-gbps is the name in every tool (dcqcn-trace's); --line-rate, the old one, still works.
TEST(GenOptions, LineRateGbpsAndItsOldSpelling) {
  auto g = parse_gen_options(cmd({"write", "--server", "10.0.0.2"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->line_rate_gbps, 10);
  g = parse_gen_options(cmd({"write", "--server", "10.0.0.2", "--line-rate-gbps", "25"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->line_rate_gbps, 25);
  g = parse_gen_options(cmd({"write", "--server", "10.0.0.2", "--line-rate", "40"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->line_rate_gbps, 40);
  g = parse_gen_options(cmd({"write", "--server", "10.0.0.2", "--line-rate", "40", "--line-rate-gbps", "40"}));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("--line-rate is the old name of --line-rate-gbps"), std::string::npos);
  EXPECT_EQ(parse_gen_options(cmd({"--help"}))->help_text.find("--line-rate "), std::string::npos);
}

// --overrun-marks: the port's receive drops marked CE (dataplane/overrun.hpp), on by default;
// off leaves them counted only, for an A/B (bench/afpacket_overrun.py --marks on,off).
TEST(GenOptions, OverrunMarksAreOnByDefaultAndCanBeTurnedOff) {
  auto g = parse_gen_options(cmd({"write", "--server", "10.0.0.2"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_TRUE(g->overrun_marks);
  g = parse_gen_options(cmd({"write", "--server", "10.0.0.2", "--overrun-marks", "off"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_FALSE(g->overrun_marks);
  g = parse_gen_options(cmd({"write", "--server", "10.0.0.2", "--overrun-marks", "maybe"}));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message, "--overrun-marks takes on or off");
}

// --backlog-marks: marks from the RX queue's backlog (dataplane/rx_backlog.hpp), off by default.
TEST(GenOptions, BacklogMarksAreOffByDefaultAndTakeKminKmaxPmax) {
  auto g = parse_gen_options(cmd({"write", "--server", "10.0.0.2"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_FALSE(g->backlog_marks.mark);
  g = parse_gen_options(cmd({"write", "--server", "10.0.0.2", "--backlog-marks", "16,48,0.25"}));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_TRUE(g->backlog_marks.mark);
  EXPECT_EQ(g->backlog_marks.kmin_frames, 16u);
  EXPECT_EQ(g->backlog_marks.kmax_frames, 48u);
  EXPECT_EQ(g->backlog_marks.pmax, 0.25);
  g = parse_gen_options(cmd({"write", "--server", "10.0.0.2", "--backlog-marks", "48,16,0.25"}));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message, "--backlog-marks: the backlog's Kmax must not be below its Kmin");
}

}  // namespace
}  // namespace roce::client
