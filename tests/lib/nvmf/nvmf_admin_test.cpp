// Engine-to-engine: the admin queue of the NVMe-oF target over a real pair of RC QPs.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/lib/nvmf/nvmf_pair.hpp"

namespace roce::nvmf::test::nvmf_admin_test {
namespace {

nv::NvmeStatus st(const std::optional<HostCompletion>& c) {
  EXPECT_TRUE(c.has_value()) << "no response";
  return c ? c->status() : nv::generic_error(0xFF);
}

template <typename T>
T read_as(NvmfRdmaHost& h, std::uint16_t cid = 0, std::size_t off = 0) {
  T t;
  std::memcpy(static_cast<void*>(&t), h.buffer(cid).data() + off, sizeof t);
  return t;
}

TEST(NvmfAdmin, ConnectEnableAndIdentifyControllerAsALinuxHostReadsIt) {
  NvmfPair p;
  p.open(0, 32);
  auto c = p.connect(0, 31, nv::kDynamicCntlid, kSubNqn, kHostNqn, 0, 5000);
  ASSERT_EQ(st(c), nv::kOk);
  const auto cntlid = static_cast<std::uint16_t>(c->cqe.dw0.get());
  EXPECT_NE(cntlid, 0);
  EXPECT_EQ(c->cqe.sqid.get(), 0);
  EXPECT_EQ(c->cqe.sqhd.get(), 1);

  auto cap = p.property_get(nv::Property::Cap, true);
  ASSERT_EQ(st(cap), nv::kOk);
  const std::uint64_t capv = cap->cqe.dw0.get() | std::uint64_t{cap->cqe.dw1.get()} << 32;
  EXPECT_EQ(capv & 0xFFFF, 31u);          // MQES: max_queue_depth - 1
  EXPECT_EQ((capv >> 37) & 1, 1u);        // NVM command set
  EXPECT_EQ((capv >> 24) & 0xFF, 15u);    // TO
  auto vs = p.property_get(nv::Property::Vs, false);
  EXPECT_EQ(vs->cqe.dw0.get(), 0x00010300u);
  auto csts = p.property_get(nv::Property::Csts, false);
  EXPECT_EQ(csts->cqe.dw0.get() & 1, 0u);
  // Identify before the controller is enabled: command sequence error.
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 0, 1), 4096, SglMode::Keyed)),
            nv::generic_error(nv::sc::kCommandSequenceError));
  ASSERT_EQ(st(p.property_set(nv::Property::Cc, kEnableCc)), nv::kOk);
  EXPECT_EQ(p.property_get(nv::Property::Csts, false)->cqe.dw0.get() & 1, 1u);
  EXPECT_EQ(p.property_get(nv::Property::Cc, false)->cqe.dw0.get(), kEnableCc);

  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 0, 1), 4096, SglMode::Keyed)), nv::kOk);
  const auto id = read_as<nv::IdentifyController>(*p.links[0].host);
  EXPECT_EQ(id.cntlid.get(), cntlid);
  EXPECT_EQ(id.cntrltype, 1);
  EXPECT_EQ(id.mdts, 2);
  EXPECT_EQ(id.sgls.get() & (nv::kSglsSupported | nv::kSglsKeyed), nv::kSglsSupported | nv::kSglsKeyed);
  EXPECT_TRUE(id.sgls.get() & nv::kSglsInCapsuleOffset);
  EXPECT_EQ(id.ioccsz.get(), (64u + 4096u) / 16);
  EXPECT_EQ(id.iorcsz.get(), 1u);
  EXPECT_EQ(id.icdoff.get(), 0);
  EXPECT_EQ(id.msdbd, 1);
  EXPECT_EQ(id.sqes, 0x66);
  EXPECT_EQ(id.cqes, 0x44);
  EXPECT_EQ(id.kas.get(), 10);
  EXPECT_EQ(id.maxcmd.get(), 32);
  EXPECT_EQ(id.nn.get(), kMaxNamespaces);
  EXPECT_EQ(id.oncs.get(), nv::kOncsDsm | nv::kOncsWriteZeroes);
  EXPECT_EQ(nv::fixed_string(id.subnqn), kSubNqn);
  EXPECT_EQ(std::string(id.sn.data(), 7), "SN-0001");
  EXPECT_EQ(p.target.find_controller(cntlid)->kato_ms, 5000u);
}

TEST(NvmfAdmin, IdentifyNamespaceListsAndDescriptors) {
  NvmfPair p;
  auto ns2 = NamespaceStore::memory(100, 4096);
  ASSERT_TRUE(p.sub->add_namespace(7, std::move(*ns2)).ok());
  p.bring_up_admin();
  NvmfRdmaHost& h = *p.links[0].host;
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 7, 0), 4096, SglMode::Keyed)), nv::kOk);
  auto ns = read_as<nv::IdentifyNamespace>(h);
  EXPECT_EQ(ns.nsze.get(), 100u);
  EXPECT_EQ(ns.lbaf[0].lbads, 12);
  EXPECT_EQ(ns.flbas, 0);
  EXPECT_EQ(ns.dlfeat, 1);
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 1, 0), 4096, SglMode::KeyedInvalidate)), nv::kOk);
  EXPECT_EQ(read_as<nv::IdentifyNamespace>(h).lbaf[0].lbads, 9);
  // Inactive but valid NSID: zeros; NSID 0 or beyond NN: invalid namespace.
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 3, 0), 4096, SglMode::Keyed)), nv::kOk);
  EXPECT_EQ(read_as<nv::IdentifyNamespace>(h).nsze.get(), 0u);
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 0, 0), 4096, SglMode::Keyed)),
            nv::generic_error(nv::sc::kInvalidNamespace));
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, kMaxNamespaces + 1, 0), 4096, SglMode::Keyed)),
            nv::generic_error(nv::sc::kInvalidNamespace));
  // Active list above NSID 0 and above NSID 1.
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 0, 2), 4096, SglMode::Keyed)), nv::kOk);
  EXPECT_EQ(read_as<nv::Le32>(h, 0, 0).get(), 1u);
  EXPECT_EQ(read_as<nv::Le32>(h, 0, 4).get(), 7u);
  EXPECT_EQ(read_as<nv::Le32>(h, 0, 8).get(), 0u);
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 1, 2), 4096, SglMode::Keyed)), nv::kOk);
  EXPECT_EQ(read_as<nv::Le32>(h, 0, 0).get(), 7u);
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 0xFFFFFFFF, 2), 4096, SglMode::Keyed)),
            nv::generic_error(nv::sc::kInvalidNamespace));
  // Descriptors: one NGUID, different per namespace.
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 1, 3), 4096, SglMode::Keyed)), nv::kOk);
  const auto d1 = read_as<std::array<std::uint8_t, 20>>(h);
  EXPECT_EQ(d1[0], 2);
  EXPECT_EQ(d1[1], 16);
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 7, 3), 4096, SglMode::Keyed)), nv::kOk);
  EXPECT_NE((read_as<std::array<std::uint8_t, 20>>(h)), d1);
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 3, 3), 4096, SglMode::Keyed)),
            nv::generic_error(nv::sc::kInvalidNamespace));
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 0, 0x55), 4096, SglMode::Keyed)),
            nv::generic_error(nv::sc::kInvalidField));
  // The data length must match the command's: a 512-byte SGL for a 4096-byte Identify.
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 0, 1), 512, SglMode::Keyed)),
            nv::generic_error(nv::sc::kDataSglLengthInvalid));
}

TEST(NvmfAdmin, SendWithInvalidateNamesTheCommandsKey) {
  NvmfPair p;
  p.bring_up_admin();
  auto r = p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 0, 1), 4096, SglMode::KeyedInvalidate);
  ASSERT_EQ(st(r), nv::kOk);
  EXPECT_TRUE(r->invalidated);
  EXPECT_TRUE(r->invalidated_expected_key);
  auto k = p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 0, 1), 4096, SglMode::Keyed);
  EXPECT_FALSE(k->invalidated);
}

TEST(NvmfAdmin, FeaturesNumberOfQueuesAndKeepAliveTimer) {
  NvmfPair p;
  const auto cntlid = p.bring_up_admin();
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::SetFeatures, 0, 0x07, 0xFFFF0001))),
            nv::generic_error(nv::sc::kInvalidField));
  auto q = p.exec(0, admin_cmd(nv::AdminOpcode::SetFeatures, 0, 0x07, 7 | 7u << 16));
  ASSERT_EQ(st(q), nv::kOk);
  EXPECT_EQ(q->cqe.dw0.get(), 3u | 3u << 16);  // capped at max_io_queues (4), 0's based
  auto g = p.exec(0, admin_cmd(nv::AdminOpcode::GetFeatures, 0, 0x07));
  EXPECT_EQ(g->cqe.dw0.get(), 3u | 3u << 16);
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::SetFeatures, 0, 0x0F, 12000))), nv::kOk);
  EXPECT_EQ(p.exec(0, admin_cmd(nv::AdminOpcode::GetFeatures, 0, 0x0F))->cqe.dw0.get(), 12000u);
  EXPECT_EQ(p.target.find_controller(cntlid)->kato_ms, 12000u);
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::SetFeatures, 0, 0x0B, 0x100))), nv::kOk);
  EXPECT_EQ(p.exec(0, admin_cmd(nv::AdminOpcode::GetFeatures, 0, 0x0B))->cqe.dw0.get(), 0x100u);
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::SetFeatures, 0, 0x06, 0))), nv::kOk);
  EXPECT_EQ(p.exec(0, admin_cmd(nv::AdminOpcode::GetFeatures, 0, 0x06))->cqe.dw0.get(), 0u);
  EXPECT_EQ(p.exec(0, admin_cmd(nv::AdminOpcode::GetFeatures, 0, 0x06 | 3u << 8))->cqe.dw0.get(), 4u);
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::SetFeatures, 0, 0x0F | 0x80000000u, 1000))),
            nv::specific_error(nv::sc::kFeatureNotSaveable));
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::SetFeatures, 0, 0x77, 0))), nv::generic_error(nv::sc::kInvalidField));
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::GetFeatures, 0, 0x77))), nv::generic_error(nv::sc::kInvalidField));
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::GetFeatures, 0, 0x07 | 5u << 8))),
            nv::generic_error(nv::sc::kInvalidField));
  EXPECT_EQ(st(p.exec(0, admin_cmd(static_cast<nv::AdminOpcode>(0xC5)))), nv::generic_error(nv::sc::kInvalidOpcode));
  // With an I/O queue connected the number of queues can no longer change.
  p.bring_up_io(1, cntlid);
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::SetFeatures, 0, 0x07, 0))),
            nv::generic_error(nv::sc::kCommandSequenceError));
}

TEST(NvmfAdmin, AnyCommandRestartsTheKeepAliveTimerAsCtrattTbkasSays) {
  NvmfPair p;
  const auto cntlid = p.bring_up_admin(1000);
  p.bring_up_io(1, cntlid);
  auto id = p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 0, 1), 4096, SglMode::Keyed);
  ASSERT_EQ(st(id), nv::kOk);
  nv::IdentifyController ic;
  std::memcpy(static_cast<void*>(&ic), p.links[0].host->buffer(0).data(), sizeof ic);
  EXPECT_EQ(ic.ctratt.get() & kCtrattTbkas, kCtrattTbkas);
  // I/O only, no Keep Alive, for three times KATO: the controller stays.
  for (int i = 0; i < 6; ++i) {
    p.run_for(500 * kMilli);
    ASSERT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Read, 1, 0, 1), 512, SglMode::Keyed)), nv::kOk) << i;
  }
  EXPECT_EQ(p.target.keep_alive_expiries(), 0u);
  // Then silence: the period the last read fell in ends, the next one passes without a
  // command, and the controller fails: within two KATO of the last command, never before one.
  p.run_for(990 * kMilli);
  EXPECT_EQ(p.target.keep_alive_expiries(), 0u);
  p.run_for(1100 * kMilli);
  EXPECT_EQ(p.target.keep_alive_expiries(), 1u);
  EXPECT_EQ(p.target.find_controller(cntlid), nullptr);
}

TEST(NvmfAdmin, ASilenceJustOverKatoAfterTrafficIsNotAnExpiry) {
  // A host quiet a little over KATO while it waits on a retransmission (a lost CM REQ of its
  // next I/O queue) keeps its controller, as with Linux's nvmet; a second silent period fails it.
  NvmfPair p;
  const auto cntlid = p.bring_up_admin(1000);
  p.run_for(900 * kMilli);
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 0, 1), 4096, SglMode::Keyed)), nv::kOk);
  p.run_for(1050 * kMilli);  // 1.05 KATO without a command
  EXPECT_EQ(p.target.keep_alive_expiries(), 0u);
  p.bring_up_io(1, cntlid);
  EXPECT_FALSE(p.links[1].target->torn_down());
  p.run_for(2100 * kMilli);
  EXPECT_EQ(p.target.keep_alive_expiries(), 1u);
}

TEST(NvmfAdmin, KeepAliveKeepsTheControllerAndItsAbsenceFailsIt) {
  NvmfPair p;
  const auto cntlid = p.bring_up_admin(1000);
  p.bring_up_io(1, cntlid);
  for (int i = 0; i < 6; ++i) {
    p.run_for(500 * kMilli);
    ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::KeepAlive))), nv::kOk) << i;
  }
  EXPECT_EQ(p.target.keep_alive_expiries(), 0u);
  EXPECT_FALSE(p.links[1].target->torn_down());
  // The timer restarted at the last Keep Alive; that Keep Alive is traffic in its period, so
  // the controller fails at the end of the second silent period (as nvmet's does).
  p.run_for(1500 * kMilli);
  EXPECT_EQ(p.target.keep_alive_expiries(), 0u);
  p.run_for(600 * kMilli);
  EXPECT_EQ(p.target.keep_alive_expiries(), 1u);
  EXPECT_TRUE(p.links[0].target->torn_down());
  EXPECT_TRUE(p.links[1].target->torn_down());
  EXPECT_EQ(p.target.find_controller(cntlid), nullptr);
  EXPECT_EQ(p.target.controller_count(), 0u);
}

TEST(NvmfAdmin, LogPagesErrorSmartAndDiscovery) {
  NvmfPair p;
  const auto cntlid = p.bring_up_admin();
  NvmfRdmaHost& h = *p.links[0].host;
  // An error first, so the error log has an entry.
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 0, 0x55), 4096, SglMode::Keyed, 5)),
            nv::generic_error(nv::sc::kInvalidField));
  const std::uint32_t numd64 = (64 / 4 - 1) << 16;
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::GetLogPage, 0, 0x01 | numd64), 64, SglMode::Keyed)), nv::kOk);
  auto e = read_as<nv::ErrorLogEntry>(h);
  EXPECT_EQ(e.error_count.get(), 1u);
  EXPECT_EQ(e.cid.get(), 5);
  EXPECT_EQ(nv::NvmeStatus::from_field(e.status.get()), nv::generic_error(nv::sc::kInvalidField));
  // SMART after a write and a read of 4 KiB on an I/O queue.
  p.bring_up_io(1, cntlid);
  ASSERT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Write, 1, 0, 8), 4096, SglMode::Keyed)), nv::kOk);
  ASSERT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Read, 1, 0, 8), 4096, SglMode::Keyed)), nv::kOk);
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::GetLogPage, 0xFFFFFFFF, 0x02 | (512 / 4 - 1) << 16), 512,
                      SglMode::Keyed)),
            nv::kOk);
  auto smart = read_as<nv::SmartLog>(h);
  EXPECT_EQ(smart.host_read_commands[0].get(), 1u);
  EXPECT_EQ(smart.host_write_commands[0].get(), 1u);
  EXPECT_EQ(smart.data_units_written[0].get(), 1u);  // 8 units of 512 B, rounded up to 1000
  EXPECT_EQ(smart.error_log_entries[0].get(), 1u);
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::GetLogPage, 0, 0x33 | numd64), 64, SglMode::Keyed)),
            nv::specific_error(nv::sc::kInvalidLogPage));
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::GetLogPage, 0, 0x70 | numd64), 64, SglMode::Keyed)),
            nv::specific_error(nv::sc::kInvalidLogPage));
  auto off = admin_cmd(nv::AdminOpcode::GetLogPage, 0, 0x02 | numd64);
  off.cdw12.set(4096);  // past the 512-byte SMART page
  EXPECT_EQ(st(p.exec(0, off, 64, SglMode::Keyed)), nv::generic_error(nv::sc::kInvalidField));
  off.cdw12.set(2);  // not dword aligned
  EXPECT_EQ(st(p.exec(0, off, 64, SglMode::Keyed)), nv::generic_error(nv::sc::kInvalidField));
  off.cdw12.set(32);  // LPO: the SMART page from its data units read
  ASSERT_EQ(st(p.exec(0, off, 64, SglMode::Keyed)), nv::kOk);
  EXPECT_EQ(read_as<nv::Le64>(h).get(), smart.data_units_read[0].get());
  // Abort: commands here run to completion, so the answer is "not aborted".
  auto abort = p.exec(0, admin_cmd(nv::AdminOpcode::Abort, 0, 3));
  ASSERT_EQ(st(abort), nv::kOk);
  EXPECT_EQ(abort->cqe.dw0.get(), 1u);
}

TEST(NvmfAdmin, DiscoveryControllerServesTheLogOfAllowedSubsystems) {
  NvmfPair p;
  auto hidden = p.target.add_subsystem("nqn.2026-12.io.rocev2-dp:private", "SN-2");
  ASSERT_TRUE(hidden.ok());
  (*hidden)->allow_host("nqn.2014-08.org.nvmexpress:uuid:someone-else");
  p.open(0, 32);
  auto c = p.connect(0, 31, nv::kDynamicCntlid, nv::kDiscoveryNqn);
  ASSERT_EQ(st(c), nv::kOk);
  ASSERT_EQ(st(p.property_set(nv::Property::Cc, 1)), nv::kOk);  // discovery: entry sizes not needed
  NvmfRdmaHost& h = *p.links[0].host;
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 0, 1), 4096, SglMode::Keyed)), nv::kOk);
  auto id = read_as<nv::IdentifyController>(h);
  EXPECT_EQ(id.cntrltype, 2);
  EXPECT_EQ(nv::fixed_string(id.subnqn), nv::kDiscoveryNqn);
  // Header first, then the whole page, as nvme-cli does.
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::GetLogPage, 0, 0x70 | (1024 / 4 - 1) << 16), 1024, SglMode::Keyed)),
            nv::kOk);
  auto hdr = read_as<nv::DiscoveryLogHeader>(h);
  ASSERT_EQ(hdr.numrec.get(), 1u);
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::GetLogPage, 0, 0x70 | (2048 / 4 - 1) << 16), 2048, SglMode::Keyed)),
            nv::kOk);
  EXPECT_EQ(read_as<nv::DiscoveryLogHeader>(h).genctr.get(), hdr.genctr.get());
  auto e = read_as<nv::DiscoveryLogEntry>(h, 0, 1024);
  EXPECT_EQ(e.trtype, 1);
  EXPECT_EQ(e.adrfam, 1);
  EXPECT_EQ(e.subtype, 2);
  EXPECT_EQ(e.cntlid.get(), 0xFFFF);
  EXPECT_EQ(std::string(e.trsvcid.data(), 5), "4420 ");
  EXPECT_EQ(nv::fixed_string(e.subnqn), kSubNqn);
  EXPECT_EQ(std::string(e.traddr.data(), 9), "10.0.0.2 ");
  EXPECT_EQ(e.rdma_qptype, 1);
  EXPECT_EQ(e.rdma_cms, 1);
  // A discovery controller has no namespaces, no I/O queues, no error/SMART pages.
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 1, 0), 4096, SglMode::Keyed)),
            nv::generic_error(nv::sc::kInvalidField));
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::GetLogPage, 0, 0x02 | (512 / 4 - 1) << 16), 512, SglMode::Keyed)),
            nv::specific_error(nv::sc::kInvalidLogPage));
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::SetFeatures, 0, 0x07, 0))), nv::generic_error(nv::sc::kInvalidField));
  p.open(1, 8);
  EXPECT_EQ(st(p.connect(1, 7, static_cast<std::uint16_t>(c->cqe.dw0.get()), nv::kDiscoveryNqn)),
            nv::specific_error(nv::sc::kConnectInvalidParameters));
}

TEST(NvmfAdmin, AsyncEventRequestsAreHeldUpToAerl) {
  NvmfPair p;
  p.bring_up_admin();
  NvmfRdmaHost& h = *p.links[0].host;
  for (std::uint16_t cid = 10; cid < 14; ++cid) ASSERT_TRUE(h.submit(cid, admin_cmd(nv::AdminOpcode::AsyncEventRequest), 0, SglMode::None).ok());
  p.run_for(100 * kMilli);
  for (std::uint16_t cid = 10; cid < 14; ++cid) EXPECT_FALSE(h.take(cid).has_value()) << cid;
  EXPECT_EQ(p.links[0].target->queue().busy_slots(), 4u);
  // AERL = 3: a fifth is refused.
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::AsyncEventRequest), 0, SglMode::None, 14)),
            nv::specific_error(nv::sc::kAsyncEventLimitExceeded));
  // Other commands still run beside the held ones.
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::KeepAlive), 0, SglMode::None, 15)), nv::kOk);
}

TEST(NvmfAdmin, ConnectErrorsCarryTheStatusAndParameterTheSpecGives) {
  NvmfPair p;
  p.sub->allow_host(kHostNqn);
  p.open(0, 32);
  // Anything but Connect first: command sequence error.
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::KeepAlive))), nv::generic_error(nv::sc::kCommandSequenceError));
  EXPECT_EQ(st(p.connect(0, 31, nv::kDynamicCntlid, kSubNqn, kHostNqn, 1)),
            nv::specific_error(nv::sc::kConnectIncompatibleFormat));
  auto bad_sub = p.connect(0, 31, nv::kDynamicCntlid, "nqn.2026-12.io.nowhere:none");
  EXPECT_EQ(st(bad_sub), nv::specific_error(nv::sc::kConnectInvalidParameters));
  EXPECT_EQ(bad_sub->cqe.dw0.get(), 256u | 1u << 16);  // IPO SUBNQN, IATTR data
  auto host = p.connect(0, 31, nv::kDynamicCntlid, kSubNqn, "nqn.2014-08.org.nvmexpress:uuid:intruder");
  EXPECT_EQ(st(host), nv::specific_error(nv::sc::kConnectInvalidHost));
  EXPECT_EQ(host->cqe.dw0.get(), 512u | 1u << 16);
  EXPECT_EQ(st(p.connect(0, 31, 5)), nv::specific_error(nv::sc::kConnectInvalidParameters));
  auto size0 = p.connect(0, 0, nv::kDynamicCntlid);
  EXPECT_EQ(size0->cqe.dw0.get(), 44u);
  EXPECT_EQ(st(p.connect(0, 32, nv::kDynamicCntlid)), nv::specific_error(nv::sc::kConnectInvalidParameters));
  auto qid = p.connect(0, 31, nv::kDynamicCntlid);  // QID field 0 on this queue: fine
  ASSERT_EQ(st(qid), nv::kOk);
  const auto cntlid = static_cast<std::uint16_t>(qid->cqe.dw0.get());
  EXPECT_EQ(p.target.controller_count(), 1u);  // the refused connects made none
  EXPECT_EQ(st(p.connect(0, 31, nv::kDynamicCntlid)), nv::generic_error(nv::sc::kCommandSequenceError));
  // I/O queue before CC.EN: sequence error; then bad CNTLID, QID beyond the granted ones,
  // a QID twice.
  p.open(1, 8);
  EXPECT_EQ(st(p.connect(1, 7, cntlid)), nv::generic_error(nv::sc::kCommandSequenceError));
  ASSERT_EQ(st(p.property_set(nv::Property::Cc, kEnableCc)), nv::kOk);
  EXPECT_EQ(st(p.connect(1, 7, static_cast<std::uint16_t>(cntlid + 1))),
            nv::specific_error(nv::sc::kConnectInvalidParameters));
  EXPECT_EQ(st(p.connect(1, 7, cntlid, kSubNqn, "nqn.2014-08.org.nvmexpress:uuid:other")),
            nv::specific_error(nv::sc::kConnectInvalidHost));
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::SetFeatures, 0, 0x07, 0))), nv::kOk);  // one I/O queue
  p.open(2, 8);
  auto beyond = p.connect(2, 7, cntlid);
  EXPECT_EQ(st(beyond), nv::specific_error(nv::sc::kConnectInvalidParameters));
  EXPECT_EQ(beyond->cqe.dw0.get(), 42u);
  ASSERT_EQ(st(p.connect(1, 7, cntlid)), nv::kOk);
  // A second QP claiming QID 1 (the CM would hand it QID 1 too).
  QueueLink& dup = p.links[3];
  {
    QpOptions o;
    o.depth = 40;
    dup.host_ep = roce::test::make_endpoint(p.net.host("host"), o);
    dup.target_ep = roce::test::make_endpoint(p.net.host("target"), o);
    roce::test::connect_pair(dup.host_ep, dup.target_ep, o);
    dup.target = std::move(*NvmfRdmaQueue::create(p.target, p.net.host("target"), dup.target_ep.pd, dup.target_ep.qp,
                                                  dup.target_ep.cq, queue_config_for(p.target.config(), 1, 8)));
    HostQueueConfig hc;
    hc.depth = 8;
    hc.max_transfer = p.target.config().max_transfer();
    dup.host = std::move(*NvmfRdmaHost::create(p.net.host("host"), dup.host_ep.pd, dup.host_ep.qp, dup.host_ep.cq, hc));
  }
  nv::ConnectCommand cc;
  cc.qid.set(1);
  cc.sqsize.set(7);
  nv::ConnectData d;
  d.cntlid.set(cntlid);
  nv::set_fixed_string(d.subnqn, kSubNqn, '\0');
  nv::set_fixed_string(d.hostnqn, kHostNqn, '\0');
  std::memcpy(dup.host->buffer(0).data(), static_cast<const void*>(&d), sizeof d);
  EXPECT_EQ(st(p.exec(3, nv::overlay<nv::Sqe>(cc), 1024, SglMode::Keyed)),
            nv::specific_error(nv::sc::kConnectControllerBusy));
  // Connect data in the capsule (I/O queue, SGLS bit 20) works as keyed does.
  p.open(4, 8);
  std::memcpy(p.links[4].host->buffer(0).data(), static_cast<const void*>(&d), sizeof d);
  cc.qid.set(4);
  // QID 4 > the 1 granted: the check after SUBNQN/HOSTNQN, so the in-capsule data was read.
  auto inl = p.exec(4, nv::overlay<nv::Sqe>(cc), 1024, SglMode::InCapsule);
  EXPECT_EQ(st(inl), nv::specific_error(nv::sc::kConnectInvalidParameters));
  EXPECT_EQ(inl->cqe.dw0.get(), 42u);
}

TEST(NvmfAdmin, PropertyErrorsAndBadEnableFailTheController) {
  NvmfPair p;
  p.open(0, 32);
  ASSERT_EQ(st(p.connect(0, 31, nv::kDynamicCntlid)), nv::kOk);
  EXPECT_EQ(st(p.property_get(nv::Property::Cap, false)), nv::generic_error(nv::sc::kInvalidField));
  EXPECT_EQ(st(p.property_get(nv::Property::Vs, true)), nv::generic_error(nv::sc::kInvalidField));
  EXPECT_EQ(st(p.property_get(static_cast<nv::Property>(0x40), false)), nv::generic_error(nv::sc::kInvalidField));
  EXPECT_EQ(st(p.property_set(nv::Property::Cap, 0, true)), nv::generic_error(nv::sc::kInvalidField));
  EXPECT_EQ(st(p.property_set(nv::Property::Csts, 1)), nv::generic_error(nv::sc::kInvalidField));
  nv::PropertyCommand c;
  c.fctype = static_cast<std::uint8_t>(nv::FabricsType::PropertyGet);
  c.attrib = 2;
  EXPECT_EQ(st(p.exec(0, nv::overlay<nv::Sqe>(c))), nv::generic_error(nv::sc::kInvalidField));
  nv::Sqe auth = admin_cmd(nv::AdminOpcode::Fabrics);
  auth.set_fctype(nv::FabricsType::AuthSend);
  EXPECT_EQ(st(p.exec(0, auth)), nv::generic_error(nv::sc::kInvalidOpcode));
  // IOSQES 7: the enable fails the controller (CSTS.CFS), never ready.
  ASSERT_EQ(st(p.property_set(nv::Property::Cc, 1u | 7u << 16 | 4u << 20)), nv::kOk);
  EXPECT_EQ(p.property_get(nv::Property::Csts, false)->cqe.dw0.get(), reg::kCstsCfs);
}

TEST(NvmfAdmin, ResetTearsDownIoQueuesAndShutdownCompletes) {
  NvmfPair p;
  const auto cntlid = p.bring_up_admin();
  p.bring_up_io(1, cntlid);
  ASSERT_EQ(st(p.property_set(nv::Property::Cc, kEnableCc & ~1u)), nv::kOk);
  p.run_for(10 * kMilli);
  EXPECT_TRUE(p.links[1].target->torn_down());
  EXPECT_FALSE(p.links[0].target->torn_down());
  EXPECT_EQ(p.property_get(nv::Property::Csts, false)->cqe.dw0.get() & reg::kCstsRdy, 0u);
  ASSERT_EQ(st(p.property_set(nv::Property::Cc, kEnableCc)), nv::kOk);
  p.bring_up_io(2, cntlid);
  ASSERT_EQ(st(p.exec(2, io_cmd(nv::IoOpcode::Flush, 1, 0, 1))), nv::kOk);
  ASSERT_EQ(st(p.property_set(nv::Property::Cc, kEnableCc | 1u << 14)), nv::kOk);
  EXPECT_EQ(p.property_get(nv::Property::Csts, false)->cqe.dw0.get() & 0xC, reg::kCstsShstComplete);
  // Disconnect: the admin queue's QP goes, the controller and its I/O queues go with it.
  p.links[0].target.reset();
  p.run_for(10 * kMilli);
  EXPECT_EQ(p.target.find_controller(cntlid), nullptr);
  EXPECT_TRUE(p.links[2].target->torn_down());
}

TEST(NvmfAdmin, ShortCapsuleIsFatalForTheQueueOnly) {
  NvmfPair p;
  p.bring_up_admin();
  std::vector<std::byte> junk(40, std::byte{0x7F});
  ASSERT_TRUE(p.links[0].host->send_raw(junk).ok());
  p.run_until([&] { return p.links[0].target->torn_down(); });
  EXPECT_TRUE(p.links[0].target->torn_down());
  EXPECT_EQ(p.links[0].target->queue().count(QueueCounter::ShortCapsules), 1u);
  EXPECT_EQ(p.target.controller_count(), 0u);
}

}  // namespace
}  // namespace roce::nvmf::test::nvmf_admin_test

namespace roce::nvmf::test::nvmf_admin_test {
namespace {

TEST(NvmfAdmin, NamespaceChangesCompleteHeldAersAndFillTheChangedList) {
  NvmfPair p;
  p.bring_up_admin();
  NvmfRdmaHost& h = *p.links[0].host;
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::Identify, 0, 1), 4096, SglMode::Keyed)), nv::kOk);
  EXPECT_EQ(read_as<nv::IdentifyController>(h).oaes.get(), kAecNamespaceAttribute);
  ASSERT_TRUE(h.submit(10, admin_cmd(nv::AdminOpcode::AsyncEventRequest), 0, SglMode::None).ok());
  // Notices not enabled: a change leaves the AER held.
  ASSERT_TRUE(p.sub->add_namespace(5, std::move(*NamespaceStore::memory(8, 512))).ok());
  p.target.notify_namespace_changed(p.sub, 5);
  p.run_for(10 * kMilli);
  EXPECT_FALSE(h.take(10).has_value());
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::SetFeatures, 0, 0x0B, kAecNamespaceAttribute), 0, SglMode::None, 1)),
            nv::kOk);
  ASSERT_TRUE(p.sub->add_namespace(6, std::move(*NamespaceStore::memory(8, 512))).ok());
  p.target.notify_namespace_changed(p.sub, 6);
  std::optional<HostCompletion> aen;
  p.run_until([&] { return (aen = h.take(10)).has_value(); });
  ASSERT_TRUE(aen);
  EXPECT_EQ(aen->cqe.dw0.get(), kAenNamespaceChanged);
  EXPECT_TRUE(aen->status().ok());
  // Masked until the log is read: another change waits in the list, the next AER stays held.
  ASSERT_TRUE(h.submit(11, admin_cmd(nv::AdminOpcode::AsyncEventRequest), 0, SglMode::None).ok());
  ASSERT_TRUE(p.sub->remove_namespace(5).ok());
  p.target.notify_namespace_changed(p.sub, 5);
  p.run_for(10 * kMilli);
  EXPECT_FALSE(h.take(11).has_value());
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::GetLogPage, 0xFFFFFFFF, 0x04 | (4096 / 4 - 1) << 16), 4096,
                      SglMode::Keyed, 2)),
            nv::kOk);
  EXPECT_EQ(read_as<nv::Le32>(h, 2, 0).get(), 6u);
  EXPECT_EQ(read_as<nv::Le32>(h, 2, 4).get(), 5u);
  EXPECT_EQ(read_as<nv::Le32>(h, 2, 8).get(), 0u);
  // Re-armed: the next change completes AER 11; with no AER held, the one after waits and
  // completes the next AER at once.
  p.target.notify_namespace_changed(p.sub, 6);
  std::optional<HostCompletion> aen2;
  p.run_until([&] { return (aen2 = h.take(11)).has_value(); });
  ASSERT_TRUE(aen2);
  ASSERT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::GetLogPage, 0, 0x04 | (4096 / 4 - 1) << 16), 4096, SglMode::Keyed, 2)),
            nv::kOk);
  p.target.notify_namespace_changed(p.sub, 6);
  auto now = p.exec(0, admin_cmd(nv::AdminOpcode::AsyncEventRequest), 0, SglMode::None, 12);
  ASSERT_EQ(st(now), nv::kOk);
  EXPECT_EQ(now->cqe.dw0.get(), kAenNamespaceChanged);
}

}  // namespace
}  // namespace roce::nvmf::test::nvmf_admin_test
