// The target's pure parts: rdma_cm private data decisions, namespace stores, subsystems.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "lib/nvmf/cm_private_data.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::nvmf::nvmf_unit_test {
namespace {

namespace nv = proto::nvme;

std::vector<std::byte> req(std::uint16_t recfmt, std::uint16_t qid, std::uint16_t hrq, std::uint16_t hsq) {
  nv::CmRequestData r;
  r.recfmt.set(recfmt);
  r.qid.set(qid);
  r.hrqsize.set(hrq);
  r.hsqsize.set(hsq);
  std::vector<std::byte> b(sizeof r);
  std::memcpy(b.data(), static_cast<const void*>(&r), sizeof r);
  return b;
}

nv::CmRejectStatus rejected(const std::variant<CmAccept, CmReject>& v) {
  EXPECT_TRUE(std::holds_alternative<CmReject>(v));
  return std::holds_alternative<CmReject>(v) ? std::get<CmReject>(v).status : nv::CmRejectStatus{};
}

TEST(NvmfCm, AcceptsTheLinuxHostsAdminAndIoRequests) {
  TargetConfig t;
  auto a = decide_cm_request(t, req(0, 0, 32, 31));
  ASSERT_TRUE(std::holds_alternative<CmAccept>(a));
  const auto& acc = std::get<CmAccept>(a);
  EXPECT_EQ(acc.reply.crqsize.get(), 32);
  EXPECT_EQ(acc.queue.qid, 0);
  EXPECT_EQ(acc.queue.depth, 32);
  EXPECT_EQ(acc.queue.inline_size, 0u);
  EXPECT_EQ(to_bytes(acc.reply).size(), 32u);
  auto io = decide_cm_request(t, req(0, 3, 128, 127));
  ASSERT_TRUE(std::holds_alternative<CmAccept>(io));
  EXPECT_EQ(std::get<CmAccept>(io).queue.inline_size, 4096u);
  EXPECT_EQ(std::get<CmAccept>(io).reply.crqsize.get(), 128);
}

TEST(NvmfCm, RejectsWithTheBindingsStatus) {
  TargetConfig t;
  const auto full = req(0, 0, 32, 31);
  EXPECT_EQ(rejected(decide_cm_request(t, std::span(full).first(16))),
            nv::CmRejectStatus::InvalidPrivateDataLength);
  EXPECT_EQ(rejected(decide_cm_request(t, req(1, 0, 32, 31))), nv::CmRejectStatus::InvalidRecfmt);
  EXPECT_EQ(rejected(decide_cm_request(t, req(0, 9, 32, 31))), nv::CmRejectStatus::InvalidQid);
  EXPECT_EQ(rejected(decide_cm_request(t, req(0, 0, 64, 63))), nv::CmRejectStatus::InvalidHsqsize);
  EXPECT_EQ(rejected(decide_cm_request(t, req(0, 1, 256, 255))), nv::CmRejectStatus::InvalidHsqsize);
  EXPECT_EQ(rejected(decide_cm_request(t, req(0, 1, 16, 31))), nv::CmRejectStatus::InvalidHrqsize);
  auto r = std::get<CmReject>(decide_cm_request(t, req(2, 0, 32, 31)));
  EXPECT_EQ(to_bytes(r.reject)[2], std::byte{0x02});
}

TEST(NvmfNamespace, FileBackedDataPersistsAcrossReopen) {
  roce::test::TempDir dir;
  const std::string path = (dir / "ns1.img").string();
  {
    auto ns = NamespaceStore::file(path, 64, 512);
    ASSERT_TRUE(ns.ok()) << ns.error().message;
    std::vector<std::byte> b(1024, std::byte{0xAB});
    EXPECT_EQ((*ns)->write(10, b), MediaResult::Ok);
    EXPECT_EQ((*ns)->write(63, b), MediaResult::OutOfRange);  // 2 blocks from the last one
    EXPECT_EQ((*ns)->flush(), MediaResult::Ok);
  }
  auto again = NamespaceStore::file(path, 0, 512);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->blocks(), 64u);
  std::vector<std::byte> r(1024);
  EXPECT_EQ((*again)->read(10, r), MediaResult::Ok);
  EXPECT_EQ(r, std::vector<std::byte>(1024, std::byte{0xAB}));
  EXPECT_EQ((*again)->zero(10, 1), MediaResult::Ok);
  EXPECT_EQ((*again)->read(10, std::span(r).first(512)), MediaResult::Ok);
  EXPECT_EQ(r[0], std::byte{0});
  EXPECT_EQ((*again)->zero(60, 5), MediaResult::OutOfRange);
  EXPECT_FALSE(NamespaceStore::file((dir / "empty.img").string(), 0, 512).ok());
  EXPECT_FALSE(NamespaceStore::memory(8, 1000).ok());
  EXPECT_FALSE(NamespaceStore::file("/nonexistent-dir/x.img", 8, 512).ok());
}

TEST(NvmfSubsystem, NqnsNamespacesAndHosts) {
  Target t;
  EXPECT_FALSE(t.add_subsystem("disk", "1").ok());
  EXPECT_FALSE(t.add_subsystem(nv::kDiscoveryNqn, "1").ok());
  auto s = t.add_subsystem("nqn.2026-12.io.example:a", "1");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(t.add_subsystem("nqn.2026-12.io.example:a", "1").ok());
  Subsystem& sub = **s;
  EXPECT_TRUE(sub.host_allowed("nqn.anyone"));
  sub.allow_host("nqn.2014-08.org.nvmexpress:uuid:1");
  EXPECT_FALSE(sub.host_allowed("nqn.anyone"));
  EXPECT_FALSE(sub.allows_any_host());
  // The last listed host removed: nobody, not anybody.
  EXPECT_TRUE(sub.disallow_host("nqn.2014-08.org.nvmexpress:uuid:1"));
  EXPECT_FALSE(sub.disallow_host("nqn.2014-08.org.nvmexpress:uuid:1"));
  EXPECT_FALSE(sub.host_allowed("nqn.2014-08.org.nvmexpress:uuid:1"));
  EXPECT_FALSE(sub.host_allowed("nqn.anyone"));
  sub.set_allow_any_host(true);
  EXPECT_TRUE(sub.host_allowed("nqn.anyone"));
  sub.allow_host("nqn.2014-08.org.nvmexpress:uuid:1");
  EXPECT_FALSE(sub.add_namespace(0, std::move(*NamespaceStore::memory(1, 512))).ok());
  EXPECT_FALSE(sub.add_namespace(kMaxNamespaces + 1, std::move(*NamespaceStore::memory(1, 512))).ok());
  EXPECT_TRUE(sub.add_namespace(3, std::move(*NamespaceStore::memory(1, 512))).ok());
  EXPECT_FALSE(sub.add_namespace(3, std::move(*NamespaceStore::memory(1, 512))).ok());
  EXPECT_EQ(sub.active_nsids(), std::vector<std::uint32_t>{3});
  EXPECT_TRUE(sub.remove_namespace(3).ok());
  EXPECT_FALSE(sub.remove_namespace(3).ok());
  // The discovery log lists only what a host may connect to.
  auto log = t.discovery_log("nqn.anyone");
  nv::DiscoveryLogHeader h;
  std::memcpy(static_cast<void*>(&h), log.data(), sizeof h);
  EXPECT_EQ(h.numrec.get(), 0u);
  // Subsystems go (the discovery log's generation moves), an unknown one is named.
  const std::uint64_t gen = t.discovery_generation();
  EXPECT_EQ(t.remove_subsystem("nqn.2026-12.io.example:none").code(), ENOENT);
  EXPECT_TRUE(t.remove_subsystem("nqn.2026-12.io.example:a").ok());
  EXPECT_EQ(t.find_subsystem("nqn.2026-12.io.example:a"), nullptr);
  EXPECT_GT(t.discovery_generation(), gen);
  EXPECT_EQ(log.size(), 1024u);
}

}  // namespace
}  // namespace roce::nvmf::nvmf_unit_test
