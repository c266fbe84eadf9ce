// roce-gen nvme-read | nvme-write | nvme-randrw as a user runs them: the initiator against the
// in-process target over a net_ring pair, verified, with its figures; bad flags refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/support/json.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::client::nvme_bench_test {
namespace {

#ifndef ROCE_GEN_BIN
#define ROCE_GEN_BIN ""
#endif

test::CommandResult gen(const std::vector<std::string>& args) { return test::run_command(ROCE_GEN_BIN, args); }

test::Json run_json(const std::vector<std::string>& args) {
  const auto r = gen(args);
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  return test::parse_json(r.out);
}

TEST(GenNvme, RandRwOnTwoQueuesVerifiesEveryReadAndTheNamespace) {
  const auto j = run_json({"nvme-randrw", "-bs", "4k", "-qd", "8", "-queues", "2", "-time", "0.3", "--size", "8", "--verify",
                           "--baseline", "--json"});
  EXPECT_EQ(j["errors"].num(), 0);
  EXPECT_EQ(j["verify"].str(), "ok");
  EXPECT_EQ(j["lcores"].num(), 2);  // the target on a worker lcore, the initiator on the main one
  // Two spinning threads on a busy machine progress only while both have a CPU: few commands
  // then, but never none.
  EXPECT_GT(j["reads"].num(), 0);
  EXPECT_GT(j["writes"].num(), 0);
  EXPECT_GT(j["iops"].num(), 0);
  EXPECT_GE(j["latency_us"]["p99"].num(), j["latency_us"]["p50"].num());
  // The same-run RDMA WRITE baseline and the ratio of the NVMe bytes to it.
  EXPECT_GT(j["write_baseline_mib_per_s"].num(), 0);
  EXPECT_NEAR(j["ratio_to_write_baseline"].num(), j["mib_per_s"].num() / j["write_baseline_mib_per_s"].num(), 1e-6);
  EXPECT_GT(j["cpu_ratio_to_write_baseline"].num(), 0);
  // Frames each way per command: at least the capsule, the response and the data of the 4 KiB
  // (one frame at the 4096 path MTU); one WRITE and, coalesced, less than one ACK per WRITE.
  EXPECT_GE(j["frames_per_command"].num(), 3.0);
  EXPECT_GE(j["baseline_frames_per_write"].num(), 1.0);
  EXPECT_LT(j["baseline_frames_per_write"].num(), 2.0);
}

TEST(GenNvme, VerifiedAcrossASeededLossyLink) {
  // One thread stepping both sides (a steady count of commands even on a busy machine), then
  // the two lcores.
  for (const char* lcores : {"1", "2"}) {
    const auto j = run_json({"nvme-randrw", "-bs", "8k", "-qd", "8", "-queues", "2", "-time", "0.3", "--size", "8", "--loss",
                             "0.01", "--reorder", "0.01", "--dup", "0.005", "--seed", "24", "--verify", "--json", "--lcores", lcores});
    EXPECT_EQ(j["errors"].num(), 0) << j["first_error"].str();
    EXPECT_EQ(j["verify"].str(), "ok");
    const double least = std::string(lcores) == "1" ? 100 : 0;
    EXPECT_GT(j["reads"].num(), least) << lcores;
    EXPECT_GT(j["writes"].num(), least) << lcores;
  }
}

// The in-process target's QPs and the initiator's run selective repeat by default (both ends
// are ours), go-back-N with --selective-repeat 0: under the same seeded loss both modes verify
// every byte, and only selective repeat resends packets alone and draws SACKs. nvme-read
// carries its data in the target's WRITEs, nvme-write in READ responses to the target.
TEST(GenNvme, SelectiveRepeatInTheInProcessBenchmark) {
  for (const char* mode : {"nvme-read", "nvme-write"}) {
    for (const char* window : {"64", "0"}) {
      const auto j = run_json({mode, "-bs", "16k", "-qd", "8", "-time", "0.3", "--size", "8", "--loss", "0.02", "--seed", "7",
                               "--verify", "--json", "--lcores", "1", "--selective-repeat", window});
      const std::string what = std::string(mode) + " --selective-repeat " + window;
      EXPECT_EQ(j["errors"].num(), 0) << what << ": " << j["first_error"].str();
      EXPECT_EQ(j["verify"].str(), "ok") << what;
      EXPECT_EQ(j["selective_repeat"].num(), std::stod(window)) << what;
      EXPECT_GT(j["retransmitted_packets"].num(), 0) << what;
      if (std::string(window) == "64") {
        EXPECT_GT(j["selective_resends"].num(), 0) << what;
        EXPECT_GT(j["sacks_received"].num(), 0) << what;
      } else {
        EXPECT_EQ(j["selective_resends"].num(), 0) << what;
        EXPECT_EQ(j["sacks_received"].num(), 0) << what;
      }
    }
  }
}

TEST(GenNvme, SequentialWriteAndReadTextOutput) {
  // The write on two lcores (the default), the read with one thread stepping both sides.
  for (const char* mode : {"nvme-write", "nvme-read"}) {
    const std::string lcores = std::string(mode) == "nvme-read" ? "1" : "2";
    const auto r = gen({mode, "--bs", "16k", "--qd", "4", "--time", "0.2", "--size", "8", "--verify", "--lcores", lcores});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("IOPS"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("p99"), std::string::npos);
    EXPECT_NE(r.out.find("verify: ok"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("errors 0"), std::string::npos);
    EXPECT_NE(r.out.find("lcores=" + lcores), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("selective repeat (window 128)"), std::string::npos) << r.out;
  }
}

TEST(GenNvme, WithoutAWorkerLcoreOneThreadStepsBothSides) {
  const auto r = gen({"--no-huge", "--no-pci", "-m", "512", "-l", "0", "--file-prefix=gen_nvme_l0_" + std::to_string(::getpid()),
                      "--log-level=error", "--", "nvme-read", "-bs", "4k", "-qd", "4", "-time", "0.2", "--size", "4", "--verify"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.err.find("no worker lcore"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("lcores=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verify: ok"), std::string::npos) << r.out;
}

TEST(GenNvme, FileBackedNamespaceHoldsTheWrites) {
  test::TempDir dir;
  const std::string path = (dir / "ns.img").string();
  const auto r = gen({"nvme-write", "-bs", "8k", "-qd", "4", "-time", "0.2", "--size", "1", "--file", path, "--verify"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("verify: ok"), std::string::npos) << r.out;
  std::ifstream in(path, std::ios::binary);
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(data.size(), 1u << 20);
  EXPECT_TRUE(std::any_of(data.begin(), data.end(), [](char c) { return c != 0; }));
  const auto bad = gen({"nvme-read", "--file", (dir / "no" / "such.img").string(), "-time", "0.1"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("cannot open namespace file"), std::string::npos) << bad.err;
}

TEST(GenNvme, BadFlagsAreRefusedBeforeDpdkStarts) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"nvme-read", "-bs", "1000"},
                                                                {"nvme-read", "--qd", "0"},
                                                                {"nvme-write", "--rw", "zigzag"},
                                                                {"nvme-randrw", "--rwmix", "101"},
                                                                {"nvme-erase"},
                                                                {"nvme-read", "--time", "0"},
                                                                {"nvme-read", "--loss", "1.5"},
                                                                {"nvme-read", "--lcores", "3"},
                                                                {"nvme-read", "--target", "10.0.0.1"},
                                                                {"nvme-read", "--target", "10.0.0.1", "--nqn", "nqn.2026-12.io.x:y"},
                                                                {"nvme-read", "--nqn", "nqn.2026-12.io.x:y"},
                                                                {"nvme-read", "--target", "10.0.0.1", "--nqn", "nqn.2026-12.io.x:y", "--dev",
                                                                 "0", "--ip", "10.0.0.2", "--loss", "0.1"},
                                                                {"nvme-read", "--target", "10.0.0.1", "--nqn", "nqn.2026-12.io.x:y", "--dev",
                                                                 "0", "--ip", "10.0.0.2", "--baseline"},
                                                                {"nvme-read", "--target", "10.0.0.1", "--nqn", "nqn.2026-12.io.x:y", "--dev",
                                                                 "0", "--ip", "10.0.0.2", "--lcores", "1"},
                                                                {"nvme-read", "--target", "10.0.0.1", "--nqn", "nqn.2026-12.io.x:y", "--dev",
                                                                 "0", "--ip", "10.0.0.2", "--selective-repeat", "48"},
                                                                {"nvme-read", "--selective-repeat", "48"}}) {
    const auto r = gen(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << r.err;
    EXPECT_NE(r.err.find("roce-gen"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  const auto h = gen({"nvme-read", "--help"});
  EXPECT_EQ(h.exit_code, 0);
  for (const char* w : {"--bs", "--qd", "--queues", "--time", "--rw", "--verify", "--target", "--nqn"}) EXPECT_NE(h.out.find(w), std::string::npos) << w;
}

}  // namespace
}  // namespace roce::client::nvme_bench_test
