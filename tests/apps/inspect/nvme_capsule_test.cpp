// roce-inspect names NVMe/RDMA capsules inside RC SENDs: the describer on crafted payloads,
// and the built binary on a crafted capture of a Connect, a Read with its response (SEND with
// Invalidate) and an error response, next to SENDs that are not NVMe.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "capture/capture_writer.hpp"
#include "apps/inspect/nvme_capsule_view.hpp"
#include "protocol/builder.hpp"
#include "protocol/nvme_rdma.hpp"
#include "tests/apps/inspect/frames.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::inspect::nvme_capsule_test {
namespace {

namespace nv = proto::nvme;

#ifndef ROCE_INSPECT_BIN
#define ROCE_INSPECT_BIN ""
#endif

template <typename T>
std::vector<std::byte> bytes_of(const T& t, std::size_t extra = 0) {
  std::vector<std::byte> v(sizeof t + extra);
  std::memcpy(v.data(), static_cast<const void*>(&t), sizeof t);
  return v;
}

nv::Sqe read_cmd() {
  nv::Sqe s;
  s.opc = 0x02;
  s.flags = nv::kPsdtSgl;
  s.cid.set(77);
  s.nsid.set(1);
  s.cdw10.set(2048);
  s.cdw12.set(7);
  s.sgl1 = nv::SglDescriptor::keyed(0x7f0000001000ull, 4096, 0xABCD, true);
  return s;
}

nv::Sqe connect_cmd() {
  nv::ConnectCommand c;
  c.cid.set(1);
  c.qid.set(0);
  c.sqsize.set(31);
  c.sgl1 = nv::SglDescriptor::keyed(0x7f0000002000ull, 1024, 0x1234, false);
  return nv::overlay<nv::Sqe>(c);
}

nv::Cqe response(std::uint16_t cid, nv::NvmeStatus st) {
  nv::Cqe c;
  c.cid.set(cid);
  c.sqid.set(1);
  c.status.set(st.field());
  return c;
}

TEST(NvmeCapsuleView, CommandsAndResponsesAreNamed) {
  const auto r = describe_nvme_capsule(bytes_of(read_cmd()), true);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->response);
  EXPECT_EQ(r->opcode, 0x02);
  EXPECT_EQ(r->cid, 77);
  EXPECT_EQ(r->nsid, 1u);
  EXPECT_EQ(r->slba, 2048u);
  EXPECT_EQ(r->nlb, 8u);
  EXPECT_EQ(r->length, 4096u);
  EXPECT_NE(r->text.find("Read|GetLogPage"), std::string::npos) << r->text;
  // Write with in-capsule data: SGL length from the offset descriptor.
  nv::Sqe w = read_cmd();
  w.opc = 0x01;
  w.sgl1 = nv::SglDescriptor::in_capsule(0, 512);
  const auto wv = describe_nvme_capsule(bytes_of(w, 512), true);
  ASSERT_TRUE(wv);
  EXPECT_EQ(wv->length, 512u);
  const auto c = describe_nvme_capsule(bytes_of(connect_cmd()), true);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->text.substr(0, 20), "NVMe Fabrics Connect");
  EXPECT_FALSE(c->nsid);
  const auto resp = describe_nvme_capsule(bytes_of(response(77, nv::generic_error(nv::sc::kLbaOutOfRange))), true);
  ASSERT_TRUE(resp);
  EXPECT_TRUE(resp->response);
  EXPECT_EQ(resp->status, 0x80);
}

TEST(NvmeCapsuleView, SendsThatAreNotCapsulesStayUnnamed) {
  EXPECT_FALSE(describe_nvme_capsule(std::vector<std::byte>(64, std::byte{0x33}), true));  // PSDT 0
  EXPECT_FALSE(describe_nvme_capsule(std::vector<std::byte>(63), true));
  nv::Sqe bad = read_cmd();
  bad.sgl1.id = 0x21;  // a segment descriptor: not the RDMA binding's
  EXPECT_FALSE(describe_nvme_capsule(bytes_of(bad), true));
  bad = read_cmd();
  bad.opc = 0x55;
  EXPECT_FALSE(describe_nvme_capsule(bytes_of(bad), true));
  auto cqe = bytes_of(response(1, nv::kOk));
  EXPECT_FALSE(describe_nvme_capsule(cqe, false));  // a SEND FIRST is never a whole response
  cqe[14] = std::byte{1};                           // phase bit: not a fabrics response
  EXPECT_FALSE(describe_nvme_capsule(cqe, true));
}

std::vector<std::byte> frame(const test::Host& from, const test::Host& to, proto::Opcode op, std::uint32_t psn,
                             const std::vector<std::byte>& payload, std::uint32_t ieth = 0) {
  auto s = test::spec(from, to, op, psn);
  if (op == proto::Opcode::RcSendOnlyInv) s.ext.ieth.rkey.set(ieth);
  std::vector<std::byte> out(proto::layout_frame(s, static_cast<std::uint32_t>(payload.size())).length);
  EXPECT_TRUE(proto::build_frame(s, payload, out, proto::CrcBackend::Isal).ok());
  return out;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(NvmeCapsuleView, RoceInspectNamesCapsulesInACraftedCapture) {
  roce::test::TempDir dir;
  const std::string path = (dir / "nvme.pcap").string();
  {
    capture::CaptureWriter w;
    ASSERT_TRUE(w.open(path, capture::LinkType::Ethernet)) << w.error();
    const std::vector<std::vector<std::byte>> frames = {
        frame(test::kA, test::kB, proto::Opcode::RcSendOnly, 1, bytes_of(connect_cmd())),
        frame(test::kB, test::kA, proto::Opcode::RcSendOnly, 9, bytes_of(response(1, nv::kOk))),
        frame(test::kA, test::kB, proto::Opcode::RcSendOnly, 2, bytes_of(read_cmd())),
        frame(test::kB, test::kA, proto::Opcode::RcSendOnlyInv, 10, bytes_of(response(77, nv::kOk)), 0xABCD),
        frame(test::kA, test::kB, proto::Opcode::RcSendOnly, 3, std::vector<std::byte>(64, std::byte{0x33})),
        frame(test::kB, test::kA, proto::Opcode::RcSendOnly, 11,
              bytes_of(response(5, nv::specific_error(nv::sc::kConnectInvalidHost)))),
    };
    std::uint32_t usec = 0;
    for (const auto& f : frames) ASSERT_TRUE(w.write(1700000000, usec += 10, f));
    ASSERT_TRUE(w.close()) << w.error();
  }
  const auto r = roce::test::run_command(ROCE_INSPECT_BIN, {path, "-T", "fields", "-e", "frame", "-e", "nvme.opcode",
                                                             "-e", "nvme.cid", "-e", "nvme.nsid", "-e", "nvme.slba",
                                                             "-e", "nvme.nlb", "-e", "nvme.length", "-e", "nvme.status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto got = lines(r.out);
  ASSERT_EQ(got.size(), 6u) << r.out;
  EXPECT_EQ(got[0], "1\t0x7f\t1\t\t\t\t1024\t");
  EXPECT_EQ(got[1], "2\t\t1\t\t\t\t\t0x0000");
  EXPECT_EQ(got[2], "3\t0x02\t77\t1\t2048\t8\t4096\t");
  EXPECT_EQ(got[3], "4\t\t77\t\t\t\t\t0x0000");
  EXPECT_EQ(got[4], "5\t\t\t\t\t\t\t");
  EXPECT_EQ(got[5], "6\t\t5\t\t\t\t\t0x0184");
  const auto table = roce::test::run_command(ROCE_INSPECT_BIN, {path});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("NVMe Fabrics Connect opc=0x7f cid=1 qid=0 sqsize=31"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("NVMe Read|GetLogPage opc=0x02 cid=77 nsid=1 slba=2048 nlb=8 sgl=keyed+inv"),
            std::string::npos);
  EXPECT_NE(table.out.find("NVMe response cid=5 sqid=1 sqhd=0 dw0=0x0 sct 1 sc 0x84 (connect invalid host) dnr"),
            std::string::npos);
  const auto filtered = roce::test::run_command(ROCE_INSPECT_BIN, {path, "-Y", "nvme.cid == 77", "-T", "fields", "-e", "frame"});
  EXPECT_EQ(filtered.out, "3\n4\n") << filtered.err;
}

}  // namespace
}  // namespace roce::inspect::nvme_capsule_test
