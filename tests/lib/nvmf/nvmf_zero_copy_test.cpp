// Zero copy: Reads and Writes on a memory namespace move their data straight between the
// host's buffers and the namespace's blocks, and overlapping commands still see whole blocks
// (a write waits for a read of its blocks still in flight, a read for a write still landing);
// a namespace removed meanwhile keeps its memory until the transfer ended.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/lib/nvmf/nvmf_pair.hpp"

namespace roce::nvmf::test::nvmf_zero_copy_test {
namespace {

// Ethernet 14 + IPv4 20 + UDP 8: the BTH opcode.
unsigned bth_opcode(std::span<const std::byte> frame) {
  return frame.size() > 42 ? std::to_integer<unsigned>(frame[42]) : 0xFFu;
}
constexpr unsigned kRcAck = 0x11;
bool rc_read_response(unsigned op) { return op >= 0x0D && op <= 0x10; }

void fill(std::span<std::byte> b, unsigned seed) {
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>((i * 7 + seed * 29) & 0xFF);
}

nv::NvmeStatus st(const std::optional<HostCompletion>& c) {
  EXPECT_TRUE(c.has_value()) << "no response";
  return c ? c->status() : nv::generic_error(0xFF);
}

// Frames the test holds back (by BTH opcode) while `hold` says so.
struct HeldLink {
  bool hold_acks = false;
  bool hold_read_responses = false;
  LinkFaults faults() {
    LinkFaults f;
    f.drop_if = [this](std::span<const std::byte> frame, std::uint64_t) {
      const unsigned op = bth_opcode(frame);
      return (hold_acks && op == kRcAck) || (hold_read_responses && rc_read_response(op));
    };
    return f;
  }
};

struct ZcPair : NvmfPair {
  explicit ZcPair(HeldLink& l) : NvmfPair(small_config(), l.faults()) {
    cntlid = bring_up_admin();
    bring_up_io(1, cntlid, 8);
    bring_up_io(2, cntlid, 8);
  }
  NamespaceStore& ns() { return *sub->find_namespace(1); }
  std::vector<std::byte> media(std::uint64_t lba, std::uint32_t nlb) {
    std::vector<std::byte> out(std::size_t{nlb} * 512);
    EXPECT_EQ(ns().read(lba, out), MediaResult::Ok);
    return out;
  }
  NvmfQueue& q(std::uint16_t qid) { return links.at(qid).target->queue(); }
  NvmfRdmaHost& h(std::uint16_t qid) { return *links.at(qid).host; }
  // Runs until the host of `qid` has the response of `cid`.
  std::optional<HostCompletion> wait(std::uint16_t qid, std::uint16_t cid) {
    std::optional<HostCompletion> got;
    run_until([&] {
      got = h(qid).take(cid);
      return got.has_value() || h(qid).failed() || links.at(qid).target->torn_down();
    });
    return got;
  }
  std::uint16_t cntlid = 0;
};

TEST(NvmfNamespace, TransfersExcludeOverlappingWritesAndWaitersStopNewOnes) {
  auto m = NamespaceStore::memory(64, 512);
  ASSERT_TRUE(m.ok());
  NamespaceStore& ns = **m;
  EXPECT_EQ(ns.memory().size(), 64u * 512);
  EXPECT_EQ(ns.blocks_at(60, 4).size(), 4u * 512);
  EXPECT_TRUE(ns.blocks_at(61, 4).empty());
  EXPECT_TRUE(ns.blocks_at(0, 65).empty());
  int a = 0, b = 0, c = 0;
  ASSERT_TRUE(ns.begin_transfer(&a, 0, 8, false));   // out of blocks 0..7
  EXPECT_TRUE(ns.begin_transfer(&b, 4, 8, false));   // reads share
  EXPECT_FALSE(ns.begin_transfer(&c, 7, 1, true));   // a transfer into them does not
  EXPECT_TRUE(ns.begin_transfer(&c, 12, 4, true));   // beside them it does
  EXPECT_TRUE(ns.conflicts(0, 1, true));
  EXPECT_FALSE(ns.conflicts(0, 1, false));
  EXPECT_TRUE(ns.conflicts(15, 1, false));            // a read of blocks landing
  EXPECT_FALSE(ns.conflicts(16, 48, true));
  EXPECT_EQ(ns.transfers(), 3u);
  ns.end_transfer(&a);
  ns.end_transfer(&b);
  EXPECT_FALSE(ns.conflicts(0, 12, true));
  ns.add_waiter();
  EXPECT_FALSE(ns.begin_transfer(&a, 20, 1, false));  // someone waits: new commands copy
  ns.remove_waiter();
  EXPECT_TRUE(ns.begin_transfer(&a, 20, 1, false));
  ns.end_transfer(&a);
  ns.end_transfer(&c);
  EXPECT_EQ(ns.transfers(), 0u);
  EXPECT_NE(ns.id(), 0u);
  auto other = NamespaceStore::memory(8, 512);
  ASSERT_TRUE(other.ok());
  EXPECT_NE((*other)->id(), ns.id());
}

TEST(NvmfZeroCopy, ReadsAndWritesMoveStraightBetweenTheHostAndTheNamespace) {
  HeldLink l;
  ZcPair p(l);
  fill(p.h(1).buffer(0).first(8192), 3);
  std::vector<std::byte> want(p.h(1).buffer(0).begin(), p.h(1).buffer(0).begin() + 8192);
  ASSERT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Write, 1, 40, 16), 8192, SglMode::Keyed)), nv::kOk);
  EXPECT_EQ(p.media(40, 16), want);
  std::memset(p.h(1).buffer(1).data(), 0, 8192);
  auto r = p.exec(1, io_cmd(nv::IoOpcode::Read, 1, 40, 16), 8192, SglMode::KeyedInvalidate, 1);
  ASSERT_EQ(st(r), nv::kOk);
  EXPECT_TRUE(r->invalidated_expected_key);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), p.h(1).buffer(1).begin()));
  EXPECT_EQ(p.q(1).count(QueueCounter::ZeroCopy), 2u);
  // In-capsule data goes from the receive buffer to the blocks (no transfer to register).
  fill(p.h(1).buffer(2).first(4096), 5);
  std::vector<std::byte> want2(p.h(1).buffer(2).begin(), p.h(1).buffer(2).begin() + 4096);
  ASSERT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Write, 1, 1000, 8), 4096, SglMode::InCapsule, 2)), nv::kOk);
  EXPECT_EQ(p.media(1000, 8), want2);
  EXPECT_EQ(p.q(1).count(QueueCounter::ZeroCopy), 2u);
  // Every transfer ended with its command's acknowledgement.
  p.run_for(kMilli);
  EXPECT_EQ(p.ns().transfers(), 0u);
  EXPECT_EQ(p.q(1).count(QueueCounter::Waits), 0u);
  // Out of range: an error status, nothing registered, no data.
  EXPECT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Read, 1, 2047, 2), 1024, SglMode::Keyed)),
            nv::generic_error(nv::sc::kLbaOutOfRange));
  EXPECT_EQ(p.ns().transfers(), 0u);
}

// A read's data goes out of the blocks until the host acknowledges it: a write of those blocks
// (another queue, in-capsule) waits until then, so the read, even retransmitted, carries whole
// old blocks, and the write lands after it.
TEST(NvmfZeroCopy, AWriteOfBlocksAReadStillSendsWaitsForItsAcknowledgement) {
  HeldLink l;
  ZcPair p(l);
  fill(p.h(1).buffer(0).first(4096), 1);
  ASSERT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Write, 1, 200, 8), 4096, SglMode::Keyed)), nv::kOk);
  const auto old_blocks = p.media(200, 8);
  p.run_for(kMilli);
  l.hold_acks = true;
  ASSERT_TRUE(p.h(1).submit(1, io_cmd(nv::IoOpcode::Read, 1, 200, 8), 4096, SglMode::Keyed).ok());
  ASSERT_TRUE(p.run_until([&] { return p.ns().transfers() == 1; }));
  fill(p.h(2).buffer(0).first(4096), 2);
  std::vector<std::byte> new_blocks(p.h(2).buffer(0).begin(), p.h(2).buffer(0).begin() + 4096);
  ASSERT_TRUE(p.h(2).submit(0, io_cmd(nv::IoOpcode::Write, 1, 204, 8), 4096, SglMode::InCapsule).ok());
  ASSERT_TRUE(p.run_until([&] { return p.q(2).waiting() == 1; }));
  EXPECT_EQ(p.q(2).count(QueueCounter::Waits), 1u);
  // The read completes at the host with the old blocks; the write has not touched them.
  auto r = p.wait(1, 1);
  ASSERT_EQ(st(r), nv::kOk);
  EXPECT_TRUE(std::equal(old_blocks.begin(), old_blocks.end(), p.h(1).buffer(1).begin()));
  EXPECT_EQ(p.media(200, 8), old_blocks);
  EXPECT_EQ(p.q(2).waiting(), 1u);
  l.hold_acks = false;
  auto w = p.wait(2, 0);
  ASSERT_EQ(st(w), nv::kOk);
  auto now_blocks = p.media(204, 8);
  EXPECT_EQ(now_blocks, new_blocks);
  EXPECT_EQ(p.q(2).waiting(), 0u);
  p.run_for(kMilli);
  EXPECT_EQ(p.ns().transfers(), 0u);
}

// A keyed write's RDMA READ lands in the blocks: a read of them waits until it landed and
// returns the new data, never half of it.
TEST(NvmfZeroCopy, AReadOfBlocksAWriteIsLandingInWaitsAndSeesTheWholeWrite) {
  HeldLink l;
  ZcPair p(l);
  fill(p.h(1).buffer(0).first(8192), 7);
  std::vector<std::byte> new_blocks(p.h(1).buffer(0).begin(), p.h(1).buffer(0).begin() + 8192);
  l.hold_read_responses = true;
  ASSERT_TRUE(p.h(1).submit(0, io_cmd(nv::IoOpcode::Write, 1, 300, 16), 8192, SglMode::Keyed).ok());
  ASSERT_TRUE(p.run_until([&] { return p.ns().transfers() == 1; }));
  ASSERT_TRUE(p.h(2).submit(0, io_cmd(nv::IoOpcode::Read, 1, 310, 8), 4096, SglMode::Keyed).ok());
  ASSERT_TRUE(p.run_until([&] { return p.q(2).waiting() == 1; }));
  // A read beside the write's blocks does not wait.
  ASSERT_EQ(st(p.exec(2, io_cmd(nv::IoOpcode::Read, 1, 400, 8), 4096, SglMode::Keyed, 1)), nv::kOk);
  EXPECT_EQ(p.q(2).waiting(), 1u);
  l.hold_read_responses = false;
  ASSERT_EQ(st(p.wait(1, 0)), nv::kOk);
  ASSERT_EQ(st(p.wait(2, 0)), nv::kOk);
  EXPECT_TRUE(std::equal(new_blocks.begin() + 5120, new_blocks.end(), p.h(2).buffer(0).begin()));
  EXPECT_EQ(p.q(2).count(QueueCounter::Waits), 1u);
  EXPECT_EQ(p.q(1).count(QueueCounter::ZeroCopy), 1u);
}

TEST(NvmfZeroCopy, ANamespaceRemovedDuringATransferKeepsItsMemoryUntilTheTransferEnds) {
  HeldLink l;
  ZcPair p(l);
  std::weak_ptr<NamespaceStore> gone = p.ns().weak_from_this();
  l.hold_acks = true;
  ASSERT_TRUE(p.h(1).submit(0, io_cmd(nv::IoOpcode::Read, 1, 0, 8), 4096, SglMode::Keyed).ok());
  ASSERT_TRUE(p.run_until([&] { return !gone.expired() && gone.lock()->transfers() == 1; }));
  ASSERT_TRUE(p.sub->remove_namespace(1).ok());
  EXPECT_FALSE(gone.expired());  // the read still sends from it
  l.hold_acks = false;
  ASSERT_EQ(st(p.wait(1, 0)), nv::kOk);
  p.run_until([&] { return gone.expired(); });
  EXPECT_TRUE(gone.expired());
  EXPECT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Read, 1, 0, 8), 4096, SglMode::Keyed, 1)),
            nv::generic_error(nv::sc::kInvalidNamespace));
}

TEST(NvmfZeroCopy, ATornDownQueueLetsGoOfItsTransfersAndWaits) {
  HeldLink l;
  ZcPair p(l);
  l.hold_acks = true;
  ASSERT_TRUE(p.h(1).submit(0, io_cmd(nv::IoOpcode::Read, 1, 0, 8), 4096, SglMode::Keyed).ok());
  ASSERT_TRUE(p.run_until([&] { return p.ns().transfers() == 1; }));
  ASSERT_TRUE(p.h(2).submit(0, io_cmd(nv::IoOpcode::Write, 1, 0, 8), 4096, SglMode::InCapsule).ok());
  ASSERT_TRUE(p.run_until([&] { return p.q(2).waiting() == 1; }));
  // A capsule shorter than an SQE is fatal to queue 1: its transfer ends with it.
  const std::vector<std::byte> short_capsule(10, std::byte{0});
  ASSERT_TRUE(p.h(1).send_raw(short_capsule).ok());
  ASSERT_TRUE(p.run_until([&] { return p.links.at(1).target->torn_down(); }));
  EXPECT_EQ(p.ns().transfers(), 0u);
  // The waiting write on queue 2 runs now.
  l.hold_acks = false;
  ASSERT_EQ(st(p.wait(2, 0)), nv::kOk);
  p.links.at(2).target.reset();
  EXPECT_EQ(p.ns().transfers(), 0u);
}

}  // namespace
}  // namespace roce::nvmf::test::nvmf_zero_copy_test
