// Engine-to-engine: NVM I/O commands over I/O queues, their error statuses, bad SGLs and
// keys, and a seeded lossy-link run with data verification.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include "tests/lib/nvmf/nvmf_pair.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::nvmf::test::nvmf_io_test {
namespace {

nv::NvmeStatus st(const std::optional<HostCompletion>& c) {
  EXPECT_TRUE(c.has_value()) << "no response";
  return c ? c->status() : nv::generic_error(0xFF);
}

void fill(std::span<std::byte> b, unsigned seed) {
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>((i * 31 + seed * 17 + (i >> 9)) & 0xFF);
}

struct IoPair : NvmfPair {
  explicit IoPair(LinkFaults f = {}, std::uint64_t seed = 1) : NvmfPair(small_config(), f, seed) {
    cntlid = bring_up_admin();
    bring_up_io(1, cntlid, 16);
  }
  std::vector<std::byte> media(std::uint64_t lba, std::uint32_t nlb) {
    std::vector<std::byte> out(std::size_t{nlb} * 512);
    EXPECT_EQ(sub->find_namespace(1)->read(lba, out), MediaResult::Ok);
    return out;
  }
  NvmfRdmaHost& h() { return *links[1].host; }
  std::uint16_t cntlid = 0;
};

TEST(NvmfIo, WriteThenReadBackKeyedInvalidateAndInCapsule) {
  IoPair p;
  fill(p.h().buffer(0).first(8192), 1);
  std::vector<std::byte> want(p.h().buffer(0).begin(), p.h().buffer(0).begin() + 8192);
  ASSERT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Write, 1, 100, 16), 8192, SglMode::Keyed)), nv::kOk);
  EXPECT_EQ(p.media(100, 16), want);
  std::memset(p.h().buffer(1).data(), 0, 8192);
  auto r = p.exec(1, io_cmd(nv::IoOpcode::Read, 1, 100, 16), 8192, SglMode::KeyedInvalidate, 1);
  ASSERT_EQ(st(r), nv::kOk);
  EXPECT_TRUE(r->invalidated_expected_key);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), p.h().buffer(1).begin()));
  // In-capsule write of 4 KiB (the inline size), read back.
  fill(p.h().buffer(2).first(4096), 9);
  std::vector<std::byte> want2(p.h().buffer(2).begin(), p.h().buffer(2).begin() + 4096);
  ASSERT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Write, 1, 2000, 8), 4096, SglMode::InCapsule, 2)), nv::kOk);
  EXPECT_EQ(p.media(2000, 8), want2);
  EXPECT_EQ(p.links[1].target->queue().count(QueueCounter::DataFetches), 2u);  // Connect data, the keyed write
  // FUA write, Flush of one namespace and of all.
  auto fua = io_cmd(nv::IoOpcode::Write, 1, 0, 1);
  fua.cdw12.set(fua.cdw12.get() | 1u << 30);
  EXPECT_EQ(st(p.exec(1, fua, 512, SglMode::Keyed)), nv::kOk);
  EXPECT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Flush, 1, 0, 1))), nv::kOk);
  EXPECT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Flush, 0xFFFFFFFF, 0, 1))), nv::kOk);
}

TEST(NvmfIo, WriteZeroesAndDatasetManagementDeallocate) {
  IoPair p;
  fill(p.h().buffer(0).first(16384), 3);
  ASSERT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Write, 1, 0, 32), 16384, SglMode::Keyed)), nv::kOk);
  ASSERT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::WriteZeroes, 1, 4, 2))), nv::kOk);
  auto m = p.media(0, 32);
  EXPECT_NE(m[3 * 512], std::byte{0});
  EXPECT_TRUE(std::all_of(m.begin() + 4 * 512, m.begin() + 6 * 512, [](std::byte b) { return b == std::byte{0}; }));
  EXPECT_NE(m[6 * 512 + 1], std::byte{0});
  // Two ranges; without AD nothing changes, with AD they read as zeros.
  auto put_ranges = [&] {
    nv::DsmRange r[2];
    r[0].slba.set(10);
    r[0].nlb.set(2);
    r[1].slba.set(20);
    r[1].nlb.set(1);
    std::memcpy(p.h().buffer(0).data(), static_cast<const void*>(r), sizeof r);
  };
  auto dsm = io_cmd(nv::IoOpcode::DatasetManagement, 1, 0, 1);
  dsm.cdw10.set(1);  // two ranges, 0's based
  dsm.cdw11.set(0);
  dsm.cdw12.set(0);
  put_ranges();
  ASSERT_EQ(st(p.exec(1, dsm, 32, SglMode::Keyed)), nv::kOk);
  EXPECT_EQ(p.media(0, 32), m);
  dsm.cdw11.set(1u << 2);
  put_ranges();
  ASSERT_EQ(st(p.exec(1, dsm, 32, SglMode::Keyed)), nv::kOk);
  auto d = p.media(0, 32);
  for (std::uint32_t lba : {10u, 11u, 20u})
    EXPECT_TRUE(std::all_of(d.begin() + lba * 512, d.begin() + (lba + 1) * 512, [](std::byte b) { return b == std::byte{0}; }))
        << lba;
  EXPECT_EQ(d[12 * 512 + 5], m[12 * 512 + 5]);
  // A range past the end: LBA out of range, and no range deallocated.
  nv::DsmRange bad[2];
  bad[0].slba.set(0);
  bad[0].nlb.set(1);
  bad[1].slba.set(2047);
  bad[1].nlb.set(2);
  std::memcpy(p.h().buffer(0).data(), static_cast<const void*>(bad), sizeof bad);
  EXPECT_EQ(st(p.exec(1, dsm, 32, SglMode::Keyed)), nv::generic_error(nv::sc::kLbaOutOfRange));
  EXPECT_EQ(p.media(0, 1), std::vector<std::byte>(d.begin(), d.begin() + 512));
  // The range list length must match NR.
  EXPECT_EQ(st(p.exec(1, dsm, 16, SglMode::Keyed)), nv::generic_error(nv::sc::kDataSglLengthInvalid));
}

TEST(NvmfIo, EveryErrorStatusAndNoWriteOutsideTheNamespace) {
  IoPair p;
  const auto before = p.media(0, 2048);
  fill(p.h().buffer(0).first(16384), 5);
  using nv::IoOpcode;
  const auto lba_oor = nv::generic_error(nv::sc::kLbaOutOfRange);
  // LBA range: the last block is fine, one past is not, and a wrapping SLBA is not.
  EXPECT_EQ(st(p.exec(1, io_cmd(IoOpcode::Write, 1, 2047, 2), 1024, SglMode::Keyed)), lba_oor);
  EXPECT_EQ(st(p.exec(1, io_cmd(IoOpcode::Write, 1, 0xFFFFFFFFFFFFFFFFull, 2), 1024, SglMode::Keyed)), lba_oor);
  EXPECT_EQ(st(p.exec(1, io_cmd(IoOpcode::Read, 1, 2048, 1), 512, SglMode::Keyed)), lba_oor);
  EXPECT_EQ(st(p.exec(1, io_cmd(IoOpcode::WriteZeroes, 1, 2040, 9))), lba_oor);
  EXPECT_EQ(p.media(0, 2048), before);
  // Namespaces.
  const auto bad_ns = nv::generic_error(nv::sc::kInvalidNamespace);
  EXPECT_EQ(st(p.exec(1, io_cmd(IoOpcode::Read, 2, 0, 1), 512, SglMode::Keyed)), bad_ns);
  EXPECT_EQ(st(p.exec(1, io_cmd(IoOpcode::Write, 0, 0, 1), 512, SglMode::Keyed)), bad_ns);
  EXPECT_EQ(st(p.exec(1, io_cmd(IoOpcode::Flush, 9, 0, 1))), bad_ns);
  EXPECT_EQ(st(p.exec(1, io_cmd(IoOpcode::WriteZeroes, 9, 0, 1))), bad_ns);
  EXPECT_EQ(st(p.exec(1, io_cmd(IoOpcode::DatasetManagement, 9, 0, 1), 16, SglMode::Keyed)), bad_ns);
  // Opcode.
  EXPECT_EQ(st(p.exec(1, io_cmd(static_cast<IoOpcode>(0x7E), 1, 0, 1))), nv::generic_error(nv::sc::kInvalidOpcode));
  // SGLs: length differs from NLB, unknown descriptor type, in-capsule offset/size, in-capsule
  // for data to the host, transfer beyond MDTS.
  EXPECT_EQ(st(p.exec(1, io_cmd(IoOpcode::Write, 1, 0, 2), 512, SglMode::Keyed)),
            nv::generic_error(nv::sc::kDataSglLengthInvalid));
  EXPECT_EQ(st(p.exec(1, io_cmd(IoOpcode::Read, 1, 0, 1), 1024, SglMode::Keyed)),
            nv::generic_error(nv::sc::kDataSglLengthInvalid));
  auto seg = io_cmd(IoOpcode::Write, 1, 0, 1);
  seg.sgl1 = nv::SglDescriptor::keyed(0, 512, 0, false);
  seg.sgl1.id = 0x21;
  EXPECT_EQ(st(p.exec(1, seg, 0, SglMode::AsGiven)), nv::generic_error(nv::sc::kSglDescriptorTypeInvalid));
  auto off = io_cmd(IoOpcode::Write, 1, 0, 1);
  off.sgl1 = nv::SglDescriptor::in_capsule(64, 512);
  EXPECT_EQ(st(p.exec(1, off, 0, SglMode::AsGiven)), nv::generic_error(nv::sc::kSglOffsetInvalid));
  auto longer = io_cmd(IoOpcode::Write, 1, 0, 16);
  longer.sgl1 = nv::SglDescriptor::in_capsule(0, 8192);  // claims more than the capsule holds
  EXPECT_EQ(st(p.exec(1, longer, 0, SglMode::AsGiven)), nv::generic_error(nv::sc::kSglOffsetInvalid));
  EXPECT_EQ(st(p.exec(1, io_cmd(IoOpcode::Read, 1, 0, 1), 512, SglMode::InCapsule)),
            nv::generic_error(nv::sc::kInvalidField));
  EXPECT_EQ(st(p.exec(1, io_cmd(IoOpcode::Read, 1, 0, 64), 16384, SglMode::Keyed)),
            nv::generic_error(nv::sc::kInvalidField));  // 32 KiB > 16 KiB MDTS
  // Fabrics Property on an I/O queue.
  nv::PropertyCommand pg;
  pg.fctype = static_cast<std::uint8_t>(nv::FabricsType::PropertyGet);
  EXPECT_EQ(st(p.exec(1, nv::overlay<nv::Sqe>(pg))), nv::generic_error(nv::sc::kInvalidField));
  EXPECT_EQ(p.media(0, 2048), before);
  EXPECT_EQ(p.links[1].target->queue().count(QueueCounter::DataFetches), 1u);  // the Connect's only
  // Every error is in the controller's error log count.
  EXPECT_EQ(p.target.find_controller(p.cntlid)->error_count, 18u);
}

TEST(NvmfIo, WriteWithAKeyOutsideTheHostsRegionFailsTheQueueNotTheNamespace) {
  IoPair p;
  const auto before = p.media(0, 2048);
  auto w = io_cmd(nv::IoOpcode::Write, 1, 0, 1);
  w.sgl1 = nv::SglDescriptor::keyed(reinterpret_cast<std::uint64_t>(p.h().buffer(0).data()), 512,
                                    p.h().shared_rkey() ^ 0x100, false);
  ASSERT_TRUE(p.h().submit(0, w, 512, SglMode::AsGiven).ok());
  p.run_until([&] { return p.links[1].target->torn_down(); });
  EXPECT_TRUE(p.links[1].target->torn_down());
  EXPECT_GE(p.links[1].target->rdma_errors(), 1u);
  EXPECT_EQ(p.media(0, 2048), before);
  // The admin queue and the controller carry on.
  EXPECT_EQ(st(p.exec(0, admin_cmd(nv::AdminOpcode::KeepAlive))), nv::kOk);
}

TEST(NvmfIo, QueueDepthOfCommandsInFlightAndTwoQueues) {
  IoPair p;
  p.bring_up_io(2, p.cntlid, 16);
  NvmfRdmaHost& h2 = *p.links[2].host;
  for (std::uint16_t cid = 0; cid < 16; ++cid) {
    fill(p.h().buffer(cid).first(4096), cid);
    ASSERT_TRUE(p.h().submit(cid, io_cmd(nv::IoOpcode::Write, 1, cid * 8u, 8), 4096, SglMode::Keyed).ok());
  }
  int done = 0;
  p.run_until([&] {
    for (std::uint16_t cid = 0; cid < 16; ++cid)
      if (auto c = p.h().take(cid)) {
        EXPECT_TRUE(c->status().ok());
        ++done;
      }
    return done == 16;
  });
  ASSERT_EQ(done, 16);
  // Every CID was taken by hand: none is left to report as completed.
  EXPECT_FALSE(p.h().next_completed().has_value());
  for (std::uint16_t cid = 0; cid < 16; ++cid)
    ASSERT_TRUE(h2.submit(cid, io_cmd(nv::IoOpcode::Read, 1, cid * 8u, 8), 4096, SglMode::Keyed).ok());
  // The second queue's completions as they came, each CID once, without asking every CID.
  done = 0;
  std::vector<int> seen(16, 0);
  p.run_until([&] {
    while (const auto cid = h2.next_completed()) {
      ++seen[*cid];
      auto c = h2.take(*cid);
      EXPECT_TRUE(c && c->status().ok());
      ++done;
    }
    return done == 16;
  });
  ASSERT_EQ(done, 16);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 16);
  EXPECT_FALSE(h2.next_completed().has_value());
  for (std::uint16_t cid = 0; cid < 16; ++cid) {
    std::vector<std::byte> want(4096);
    fill(want, cid);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), h2.buffer(cid).begin())) << cid;
  }
  // Two more rounds on the first queue taken by hand fill its list of completions twice over
  // (the stale entries make way); the third round's CIDs are each reported once.
  for (int round = 0; round < 3; ++round) {
    for (std::uint16_t cid = 0; cid < 16; ++cid)
      ASSERT_TRUE(p.h().submit(cid, io_cmd(nv::IoOpcode::Read, 1, cid * 8u, 8), 4096, SglMode::Keyed).ok());
    std::vector<int> got(16, 0);
    int n = 0;
    ASSERT_TRUE(p.run_until([&] {
      if (round < 2) {
        for (std::uint16_t cid = 0; cid < 16; ++cid)
          if (p.h().take(cid)) ++n;
      } else {
        while (const auto cid = p.h().next_completed()) {
          ++got[*cid];
          if (p.h().take(*cid)) ++n;
        }
      }
      return n == 16;
    }));
    if (round == 2) {
      EXPECT_EQ(std::count(got.begin(), got.end(), 1), 16);
    }
  }
  EXPECT_FALSE(p.h().next_completed().has_value());
}

// Random reads and writes on two I/O queues over a link losing, reordering and duplicating
// frames; every read is checked against a model of the namespace.
TEST(NvmfIo, SeededLossyLinkRandomIoVerifiesEveryRead) {
  LinkFaults f;
  f.loss = 0.02;
  f.reorder = 0.02;
  f.duplicate = 0.01;
  IoPair p(f, 4420);
  p.bring_up_io(2, p.cntlid, 16);
  std::vector<std::byte> model(2048 * 512, std::byte{0});
  std::mt19937_64 rng(24);
  std::uint64_t reads = 0, writes = 0, verified = 0;
  struct Pending {
    bool busy = false;
    bool write = false;
    std::uint64_t lba = 0;
    std::uint32_t nlb = 0;
  };
  std::map<std::uint16_t, std::array<Pending, 8>> pending;
  // Writes to one LBA range never overlap with other commands in flight: each queue slot owns
  // a disjoint stripe, so the model knows what a read must return.
  const int kOps = 400;
  int issued = 0, completed = 0;
  p.run_until(
      [&] {
        for (std::uint16_t qid : {std::uint16_t{1}, std::uint16_t{2}}) {
          NvmfRdmaHost& h = *p.links[qid].host;
          for (std::uint16_t cid = 0; cid < 8; ++cid) {
            Pending& pd = pending[qid][cid];
            if (pd.busy) {
              auto c = h.take(cid);
              if (!c) continue;
              EXPECT_TRUE(c->status().ok()) << nv::to_string(c->status());
              if (!pd.write) {
                ++verified;
                EXPECT_TRUE(std::equal(h.buffer(cid).begin(), h.buffer(cid).begin() + pd.nlb * 512,
                                       model.begin() + static_cast<std::ptrdiff_t>(pd.lba * 512)))
                    << "read of LBA " << pd.lba;
              }
              pd.busy = false;
              ++completed;
            }
            if (issued == kOps) continue;
            const std::uint64_t stripe = (qid - 1u) * 8u + cid;  // 16 stripes of 128 LBAs
            pd.nlb = 1 + static_cast<std::uint32_t>(rng() % 16);
            pd.lba = stripe * 128 + rng() % (128 - pd.nlb + 1);
            pd.write = rng() % 2 == 0;
            const std::uint32_t len = pd.nlb * 512;
            if (pd.write) {
              auto b = h.buffer(cid).first(len);
              for (auto& x : b) x = static_cast<std::byte>(rng());
              std::memcpy(model.data() + pd.lba * 512, b.data(), len);
              ++writes;
            } else {
              ++reads;
            }
            const SglMode mode = pd.write && len <= 4096 && rng() % 2 ? SglMode::InCapsule
                                 : rng() % 3 == 0                    ? SglMode::KeyedInvalidate
                                                                     : SglMode::Keyed;
            const auto sub = h.submit(cid, io_cmd(pd.write ? nv::IoOpcode::Write : nv::IoOpcode::Read, 1, pd.lba, pd.nlb),
                                      len, mode);
            EXPECT_TRUE(sub.ok()) << sub.error().message;
            if (!sub) return true;
            pd.busy = true;
            ++issued;
          }
        }
        return completed == kOps;
      },
      120 * kSecond);
  EXPECT_EQ(completed, kOps);
  for (std::uint16_t qid : {std::uint16_t{1}, std::uint16_t{2}}) {
    EXPECT_FALSE(p.links[qid].host->failed()) << p.links[qid].host->failure();
    EXPECT_FALSE(p.links[qid].target->torn_down()) << p.links[qid].target->queue().failure();
  }
  EXPECT_GT(reads, 100u);
  EXPECT_GT(writes, 100u);
  EXPECT_EQ(verified, reads);
  EXPECT_GT(p.net.stats("host").lost + p.net.stats("target").lost, 0u);
  std::vector<std::byte> all(2048 * 512);
  ASSERT_EQ(p.sub->find_namespace(1)->read(0, all), MediaResult::Ok);
  EXPECT_TRUE(all == model);
}

}  // namespace
}  // namespace roce::nvmf::test::nvmf_io_test

namespace roce::nvmf::test::nvmf_io_test {
namespace {

// The host reuses a CID once it sees the response; the target frees the slot only when the
// response is acknowledged. With the host's ACKs held back, capsules beyond the slots wait in
// their receives (backlog) and run once the ACKs come: nothing lost, nothing failed.
TEST(NvmfIo, CapsulesWaitInTheirReceivesWhileResponsesAreUnacknowledged) {
  bool hold_acks = false;
  LinkFaults f;
  f.drop_if = [&](std::span<const std::byte> frame, std::uint64_t) {
    // Ethernet 14 + IPv4 20 + UDP 8: the BTH opcode; 0x11 = RC ACKNOWLEDGE.
    return hold_acks && frame.size() > 42 && std::to_integer<unsigned>(frame[42]) == 0x11;
  };
  // The target must send more than the congestion window's first 16 packets with no ACK back
  // for the host to fill its slots: a window (on by default) holds it there until the ACK timer
  // runs out of retries. The case is the target's backlog, not the window: without it.
  rdma::EngineConfig engine;
  engine.tuning.window.go_back_n_congestion = false;
  NvmfPair p(NvmfPair::small_config(), f, 1, engine);
  const auto cntlid = p.bring_up_admin();
  p.bring_up_io(1, cntlid, 4);
  NvmfRdmaHost& h = *p.links[1].host;
  hold_acks = true;
  int done = 0, issued = 0;
  const int kCommands = 24;
  p.run_until(
      [&] {
        for (std::uint16_t cid = 0; cid < 4; ++cid) {
          if (h.outstanding(cid)) {
            auto c = h.take(cid);
            if (!c) continue;
            EXPECT_TRUE(c->status().ok()) << nv::to_string(c->status());
            ++done;
          }
          if (issued < kCommands) {
            EXPECT_TRUE(h.submit(cid, io_cmd(nv::IoOpcode::Read, 1, cid * 8u, 8), 4096, SglMode::Keyed).ok());
            ++issued;
          }
        }
        if (p.links[1].target->backlogged() > 0) hold_acks = false;
        return done == kCommands || h.failed() || p.links[1].target->torn_down();
      },
      30 * kSecond);
  EXPECT_EQ(done, kCommands);
  EXPECT_GT(p.links[1].target->backlogged(), 0u);
  EXPECT_FALSE(p.links[1].target->torn_down()) << p.links[1].target->queue().failure();
  EXPECT_EQ(p.links[1].target->queue().count(QueueCounter::Overflows), 0u);
}

}  // namespace
}  // namespace roce::nvmf::test::nvmf_io_test

namespace roce::nvmf::test::nvmf_io_test {
namespace {

TEST(NvmfIo, FileBackedNamespaceKeepsWhatTheHostWrote) {
  roce::test::TempDir dir;
  const std::string path = (dir / "ns2.img").string();
  std::vector<std::byte> want(8192);
  {
    NvmfPair p;
    auto ns = NamespaceStore::file(path, 256, 512);
    ASSERT_TRUE(ns.ok()) << ns.error().message;
    ASSERT_TRUE(p.sub->add_namespace(2, std::move(*ns)).ok());
    const auto cntlid = p.bring_up_admin();
    p.bring_up_io(1, cntlid);
    fill(p.links[1].host->buffer(0).first(8192), 11);
    std::copy_n(p.links[1].host->buffer(0).begin(), 8192, want.begin());
    ASSERT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Write, 2, 100, 16), 8192, SglMode::Keyed)), nv::kOk);
    ASSERT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Flush, 2, 0, 1))), nv::kOk);
    EXPECT_EQ(st(p.exec(1, io_cmd(nv::IoOpcode::Write, 2, 250, 16), 8192, SglMode::Keyed)),
              nv::generic_error(nv::sc::kLbaOutOfRange));
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(file.size(), 256u * 512);
  EXPECT_EQ(std::memcmp(file.data() + 100 * 512, want.data(), want.size()), 0);
  EXPECT_TRUE(std::all_of(file.begin() + 116 * 512, file.end(), [](char c) { return c == 0; }));
}

}  // namespace
}  // namespace roce::nvmf::test::nvmf_io_test
