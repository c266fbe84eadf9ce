// The NVMe-oF target's namespaces through roce-appliance's control socket, as an operator
// changes them: listed, added (memory or a file, at a given or the lowest free NSID), removed,
// and every bad request answered with its reason while the appliance keeps serving. One
// appliance on a null port with --nvmf-subsystem; the tests run in order on it.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/apps/appliance/appliance_process.hpp"

namespace roce::client::nvmf_control_test {
namespace {

using test::ControlClient;
using test::error_of;
using test::Json;
using test::ok;

constexpr const char* kNqn = "nqn.2026-12.io.rocev2-dp:control-test";

class NvmfControl : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    appliance_ = std::make_unique<test::ApplianceProcess>(
        std::vector<std::string>{"--nvmf-subsystem", kNqn, "--nvmf-namespace", "mem:1M"}, "nvmfctl");
  }
  static void TearDownTestSuite() { appliance_.reset(); }
  void SetUp() override { ASSERT_TRUE(appliance_->running()) << "roce-appliance did not start:\n" << appliance_->stderr_text(); }

  static std::vector<std::uint64_t> nsids(ControlClient& c) {
    const Json j = c.call(R"({"cmd":"nvmf_namespaces"})");
    EXPECT_TRUE(ok(j)) << error_of(j);
    std::vector<std::uint64_t> out;
    for (const Json& n : j["namespaces"].array()) out.push_back(n["nsid"].u64());
    return out;
  }

  static inline std::unique_ptr<test::ApplianceProcess> appliance_;
};

TEST_F(NvmfControl, ListsTheNamespacesGivenAtStart) {
  ControlClient c(appliance_->socket());
  ASSERT_TRUE(c.connected()) << c.error();
  const Json j = c.call(R"({"cmd":"nvmf_namespaces"})");
  ASSERT_TRUE(ok(j)) << error_of(j);
  EXPECT_EQ(j["subsystem"].str(), kNqn);
  const auto& list = j["namespaces"].array();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["nsid"].u64(), 1u);
  EXPECT_EQ(list[0]["backing"].str(), "memory");
  EXPECT_EQ(list[0]["block_size"].u64(), 512u);
  EXPECT_EQ(list[0]["blocks"].u64(), 2048u);
  EXPECT_EQ(list[0]["bytes"].u64(), 1u << 20);
}

TEST_F(NvmfControl, AddsAndRemovesNamespaces) {
  ControlClient c(appliance_->socket());
  ASSERT_TRUE(c.connected()) << c.error();
  const std::string file = (appliance_->dir() / "ns2.img").string();
  // The lowest free NSID, a new file of the size asked for.
  const Json added = c.call(R"({"cmd":"nvmf_add_namespace","backing":"file:)" + file + R"(:2M"})");
  ASSERT_TRUE(ok(added)) << error_of(added);
  EXPECT_EQ(added["nsid"].u64(), 2u);
  EXPECT_EQ(std::filesystem::file_size(file), 2u << 20);
  // A chosen NSID.
  const Json at7 = c.call(R"({"cmd":"nvmf_add_namespace","backing":"mem:64K","nsid":7})");
  ASSERT_TRUE(ok(at7)) << error_of(at7);
  EXPECT_EQ(at7["nsid"].u64(), 7u);
  EXPECT_EQ(nsids(c), (std::vector<std::uint64_t>{1, 2, 7}));
  const Json listed = c.call(R"({"cmd":"nvmf_namespaces"})");
  EXPECT_EQ(listed["namespaces"].array()[1]["backing"].str(), "file");
  EXPECT_EQ(listed["namespaces"].array()[1]["path"].str(), file);
  EXPECT_EQ(listed["namespaces"].array()[1]["bytes"].u64(), 2u << 20);
  // The next free one is 3.
  const Json at3 = c.call(R"({"cmd":"nvmf_add_namespace","backing":"mem:4K"})");
  ASSERT_TRUE(ok(at3)) << error_of(at3);
  EXPECT_EQ(at3["nsid"].u64(), 3u);

  const Json removed = c.call(R"({"cmd":"nvmf_remove_namespace","nsid":2})");
  ASSERT_TRUE(ok(removed)) << error_of(removed);
  EXPECT_EQ(nsids(c), (std::vector<std::uint64_t>{1, 3, 7}));
  // The file stays, with what was written to it: removing a namespace is not deleting data.
  EXPECT_TRUE(std::filesystem::exists(file));
  // A removed NSID can be used again, by the same file.
  const Json again = c.call(R"({"cmd":"nvmf_add_namespace","backing":"file:)" + file + R"(","nsid":2})");
  ASSERT_TRUE(ok(again)) << error_of(again);
  EXPECT_EQ(nsids(c), (std::vector<std::uint64_t>{1, 2, 3, 7}));
  for (int n : {2, 3, 7}) {
    const Json r = c.call(R"({"cmd":"nvmf_remove_namespace","nsid":)" + std::to_string(n) + "}");
    EXPECT_TRUE(ok(r)) << error_of(r);
  }
  EXPECT_EQ(nsids(c), (std::vector<std::uint64_t>{1}));
}

TEST_F(NvmfControl, RefusesBadRequestsWithTheReason) {
  ControlClient c(appliance_->socket());
  ASSERT_TRUE(c.connected()) << c.error();
  const std::string file = (appliance_->dir() / "dup.img").string();
  ASSERT_TRUE(ok(c.call(R"({"cmd":"nvmf_add_namespace","backing":"file:)" + file + R"(:1M","nsid":5})")));
  const std::vector<std::pair<std::string, std::string>> bad{
      {R"({"cmd":"nvmf_add_namespace"})", "nvmf_add_namespace: \"backing\" is missing"},
      {R"({"cmd":"nvmf_add_namespace","backing":7})", "\"backing\""},
      {R"({"cmd":"nvmf_add_namespace","backing":"disk:1M"})", "expected mem:SIZE or file:PATH[:SIZE]"},
      {R"({"cmd":"nvmf_add_namespace","backing":"mem:0"})", "needs a size"},
      {R"({"cmd":"nvmf_add_namespace","backing":"mem:100"})", "smaller than one block"},
      {R"({"cmd":"nvmf_add_namespace","backing":"mem:1X"})", "unit must be K, M or G"},
      {R"({"cmd":"nvmf_add_namespace","backing":"mem:1M","nsid":0})", "\"nsid\" 0 is outside 1 .."},
      {R"({"cmd":"nvmf_add_namespace","backing":"mem:1M","nsid":1025})", "\"nsid\" 1025 is outside"},
      {R"({"cmd":"nvmf_add_namespace","backing":"mem:1M","nsid":"two"})", "\"nsid\""},
      {R"({"cmd":"nvmf_add_namespace","backing":"mem:1M","size":5})", "\"size\""},
      {R"({"cmd":"nvmf_add_namespace","backing":"mem:1M","nsid":1})", "NSID 1 is already in use"},
      {R"({"cmd":"nvmf_add_namespace","backing":"file:)" + file + R"("})", "already backs NSID 5"},
      {R"({"cmd":"nvmf_add_namespace","backing":"file:/nonexistent-dir/x.img:1M"})", "/nonexistent-dir/x.img"},
      {R"({"cmd":"nvmf_remove_namespace"})", "nvmf_remove_namespace: \"nsid\" is missing"},
      {R"({"cmd":"nvmf_remove_namespace","nsid":9})", "no NSID 9 in " + std::string(kNqn)},
      {R"({"cmd":"nvmf_remove_namespace","nsid":4096})", "\"nsid\" 4096 is outside"},
  };
  for (const auto& [line, want] : bad) {
    const Json j = c.call(line);
    EXPECT_FALSE(ok(j)) << line;
    EXPECT_NE(error_of(j).find(want), std::string::npos) << line << " -> " << error_of(j);
  }
  // Nothing half-made: the namespaces are those from before the bad requests.
  EXPECT_EQ(nsids(c), (std::vector<std::uint64_t>{1, 5}));
  EXPECT_TRUE(ok(c.call(R"({"cmd":"nvmf_remove_namespace","nsid":5})")));
  // help lists the commands with their fields.
  const Json help = c.call(R"({"cmd":"help"})");
  ASSERT_TRUE(ok(help));
  EXPECT_TRUE(help["commands"].has("nvmf_add_namespace"));
}

// Subsystems and their allowed hosts, as an operator changes them on the socket.
TEST_F(NvmfControl, AddsSubsystemsAndChangesTheirAllowedHosts) {
  ControlClient c(appliance_->socket());
  ASSERT_TRUE(c.connected()) << c.error();
  const std::string second = "nqn.2026-12.io.rocev2-dp:control-second";
  const std::string host = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222";
  ASSERT_TRUE(ok(c.call(R"({"cmd":"nvmf_add_subsystem","nqn":")" + second + R"("})")));
  ASSERT_TRUE(ok(c.call(R"({"cmd":"nvmf_add_namespace","backing":"mem:64K","subsystem":")" + second + R"("})")));
  ASSERT_TRUE(ok(c.call(R"({"cmd":"nvmf_allow_host","host":")" + host + R"(","subsystem":")" + second + R"("})")));
  const auto find = [&](const Json& list, const std::string& nqn) -> const Json* {
    for (const Json& s : list["subsystems"].array())
      if (s["nqn"].str() == nqn) return &s;
    return nullptr;
  };
  Json j = c.call(R"({"cmd":"nvmf_subsystems"})");
  ASSERT_TRUE(ok(j)) << error_of(j);
  EXPECT_EQ(j["subsystems"].array().size(), 2u);
  const Json* first = find(j, kNqn);
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE((*first)["allow_any_host"].boolean());
  const Json* sec = find(j, second);
  ASSERT_NE(sec, nullptr);
  EXPECT_FALSE((*sec)["allow_any_host"].boolean());
  ASSERT_EQ((*sec)["hosts"].array().size(), 1u);
  EXPECT_EQ((*sec)["hosts"].array()[0].str(), host);
  EXPECT_EQ((*sec)["namespaces"].u64(), 1u);
  EXPECT_EQ((*sec)["controllers"].u64(), 0u);
  const Json ns = c.call(R"({"cmd":"nvmf_namespaces","subsystem":")" + second + R"("})");
  ASSERT_TRUE(ok(ns)) << error_of(ns);
  EXPECT_EQ(ns["namespaces"].array().size(), 1u);
  // The host taken off: nobody left, the subsystem admits none until allow_any_host.
  ASSERT_TRUE(ok(c.call(R"({"cmd":"nvmf_disallow_host","host":")" + host + R"(","subsystem":")" + second + R"("})")));
  j = c.call(R"({"cmd":"nvmf_subsystems"})");
  sec = find(j, second);
  ASSERT_NE(sec, nullptr);
  EXPECT_TRUE((*sec)["hosts"].array().empty());
  EXPECT_FALSE((*sec)["allow_any_host"].boolean());
  ASSERT_TRUE(ok(c.call(R"({"cmd":"nvmf_allow_any_host","allow":true,"subsystem":")" + second + R"("})")));
  j = c.call(R"({"cmd":"nvmf_subsystems"})");
  sec = find(j, second);
  ASSERT_NE(sec, nullptr);
  EXPECT_TRUE((*sec)["allow_any_host"].boolean());
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"cmd":"nvmf_add_subsystem","nqn":")" + second + R"("})", "exists"},
      {R"({"cmd":"nvmf_add_subsystem","nqn":"disk"})", "is not an NQN"},
      {R"({"cmd":"nvmf_add_subsystem"})", "\"nqn\" is missing"},
      {R"({"cmd":"nvmf_allow_host","host":"x"})", "not a valid host NQN"},
      {R"({"cmd":"nvmf_allow_host","host":")" + host + R"(","subsystem":"nqn.2026-12.io.x:none"})", "no subsystem"},
      {R"({"cmd":"nvmf_disallow_host","host":")" + host + R"("})", "is not among the allowed hosts"},
      {R"({"cmd":"nvmf_allow_any_host","allow":"yes"})", "\"allow\""},
      {R"({"cmd":"nvmf_remove_subsystem","nqn":"nqn.2026-12.io.x:none"})", "no subsystem"},
  };
  for (const auto& [line, want] : bad) {
    const Json r = c.call(line);
    EXPECT_FALSE(ok(r)) << line;
    EXPECT_NE(error_of(r).find(want), std::string::npos) << line << " -> " << error_of(r);
  }
  ASSERT_TRUE(ok(c.call(R"({"cmd":"nvmf_remove_subsystem","nqn":")" + second + R"("})")));
  j = c.call(R"({"cmd":"nvmf_subsystems"})");
  EXPECT_EQ(j["subsystems"].array().size(), 1u);
}

TEST(NvmfControlWithoutTarget, SaysThereIsNoTarget) {
  test::ApplianceProcess a(std::vector<std::string>{}, "nvmfnone");
  ASSERT_TRUE(a.running()) << a.stderr_text();
  ControlClient c(a.socket());
  ASSERT_TRUE(c.connected()) << c.error();
  for (const std::string line : {R"({"cmd":"nvmf_namespaces"})", R"({"cmd":"nvmf_add_namespace","backing":"mem:1M"})",
                                 R"({"cmd":"nvmf_remove_namespace","nsid":1})"}) {
    const Json j = c.call(line);
    EXPECT_FALSE(ok(j)) << line;
    EXPECT_NE(error_of(j).find("--nvmf-subsystem"), std::string::npos) << error_of(j);
  }
}

}  // namespace
}  // namespace roce::client::nvmf_control_test
