#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "protocol/nvme.hpp"
#include "protocol/nvme_rdma.hpp"

namespace roce::proto::nvme::nvme_test {
namespace {

template <typename T>
std::vector<std::uint8_t> bytes_of(const T& t) {
  std::vector<std::uint8_t> v(sizeof t);
  std::memcpy(v.data(), static_cast<const void*>(&t), sizeof t);
  return v;
}

TEST(NvmeLe, FieldsAreLittleEndian) {
  le::Le32 v = le::Le32::of(0x11223344);
  EXPECT_EQ(v.bytes[0], 0x44);
  EXPECT_EQ(v.bytes[3], 0x11);
  EXPECT_EQ(v.get(), 0x11223344u);
  le::Le64 w = le::Le64::of(0x0102030405060708ull);
  EXPECT_EQ(w.bytes[0], 0x08);
  EXPECT_EQ(w.get(), 0x0102030405060708ull);
  EXPECT_EQ(le::Le24::of(0xABCDEF).bytes[2], 0xAB);
}

TEST(NvmeSgl, KeyedDescriptorLayoutMatchesTheBinding) {
  const auto d = SglDescriptor::keyed(0x1122334455667788ull, 0x123456, 0xA1B2C3D4, false);
  const auto b = bytes_of(d);
  EXPECT_EQ(b[0], 0x88);
  EXPECT_EQ(b[7], 0x11);
  EXPECT_EQ(b[8], 0x56);  // length, 24-bit little-endian
  EXPECT_EQ(b[10], 0x12);
  EXPECT_EQ(b[11], 0xD4);  // key
  EXPECT_EQ(b[14], 0xA1);
  EXPECT_EQ(b[15], 0x40);
  EXPECT_EQ(classify(d), SglKind::KeyedAddress);
  EXPECT_EQ(d.keyed_length(), 0x123456u);
  EXPECT_EQ(d.key(), 0xA1B2C3D4u);
  const auto inv = SglDescriptor::keyed(1, 2, 3, true);
  EXPECT_EQ(inv.id, 0x4F);
  EXPECT_EQ(classify(inv), SglKind::KeyedInvalidate);
}

TEST(NvmeSgl, InCapsuleAndUnknownTypes) {
  const auto d = SglDescriptor::in_capsule(0, 4096);
  EXPECT_EQ(d.id, 0x01);
  EXPECT_EQ(classify(d), SglKind::InCapsule);
  EXPECT_EQ(d.offset_length(), 4096u);
  SglDescriptor seg;
  seg.id = 0x21;  // segment, offset: not used by the binding's hosts
  EXPECT_EQ(classify(seg), SglKind::Unsupported);
  seg.id = 0x10;
  EXPECT_EQ(classify(seg), SglKind::Unsupported);
  // The all-zero keyed descriptor (NULL SGL) is keyed with length 0.
  SglDescriptor null;
  null.id = 0x40;
  EXPECT_EQ(classify(null), SglKind::KeyedAddress);
  EXPECT_EQ(null.keyed_length(), 0u);
}

TEST(NvmeCqe, StatusFieldEncodesScSctDnrAboveThePhaseBit) {
  const NvmeStatus lba = generic_error(sc::kLbaOutOfRange);
  EXPECT_EQ(lba.field(), 0x8000 | 0x80 << 1);
  const NvmeStatus host = specific_error(sc::kConnectInvalidHost);
  EXPECT_EQ(host.field(), 0x8000 | 1 << 9 | 0x84 << 1);
  EXPECT_EQ(NvmeStatus::from_field(host.field()), host);
  EXPECT_EQ(kOk.field(), 0);
  EXPECT_EQ(to_string(host), "sct 1 sc 0x84 (connect invalid host) dnr");
  Cqe c;
  c.cid.set(0x1234);
  c.status.set(lba.field());
  const auto b = bytes_of(c);
  EXPECT_EQ(b[12], 0x34);
  EXPECT_EQ(b[13], 0x12);
  EXPECT_EQ(b[15], 0x81);
}

TEST(NvmeConnect, CommandAndDataAtTheirOffsets) {
  ConnectCommand c;
  c.cid.set(7);
  c.qid.set(3);
  c.sqsize.set(127);
  c.kato.set(5000);
  c.sgl1 = SglDescriptor::keyed(0x1000, kConnectDataSize, 0x55, false);
  const auto b = bytes_of(c);
  EXPECT_EQ(b[0], 0x7F);
  EXPECT_EQ(b[1], 0x40);
  EXPECT_EQ(b[4], 0x01);
  EXPECT_EQ(b[42], 3);
  EXPECT_EQ(b[44], 127);
  EXPECT_EQ(b[48] | b[49] << 8, 5000);
  const auto s = overlay<Sqe>(c);
  EXPECT_EQ(s.fctype(), 0x01);
  ConnectData d;
  d.cntlid.set(kDynamicCntlid);
  set_fixed_string(d.subnqn, "nqn.2026-12.io.example:disk", '\0');
  set_fixed_string(d.hostnqn, "nqn.host", '\0');
  const auto db = bytes_of(d);
  EXPECT_EQ(db[16], 0xFF);
  EXPECT_EQ(db[256], 'n');
  EXPECT_EQ(db[512 + 7], 't');
  EXPECT_EQ(fixed_string(d.subnqn), "nqn.2026-12.io.example:disk");
}

TEST(NvmeProperty, GetAndSetLayout) {
  PropertyCommand p;
  p.fctype = static_cast<std::uint8_t>(FabricsType::PropertySet);
  p.attrib = 0;
  p.ofst.set(static_cast<std::uint32_t>(Property::Cc));
  p.value.set(0x460001);
  const auto b = bytes_of(p);
  EXPECT_EQ(b[40], 0);
  EXPECT_EQ(b[44], 0x14);
  EXPECT_EQ(b[48], 0x01);
  EXPECT_EQ(b[50], 0x46);
}

TEST(NvmeRdmaCm, PrivateDataRoundTrip) {
  CmRequestData r;
  r.qid.set(1);
  r.hrqsize.set(128);
  r.hsqsize.set(127);
  std::vector<std::byte> buf(sizeof r);
  std::memcpy(buf.data(), static_cast<const void*>(&r), sizeof r);
  EXPECT_EQ(std::to_integer<int>(buf[4]), 128);
  const auto p = parse_cm_request(buf);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->hsqsize.get(), 127);
  EXPECT_FALSE(parse_cm_request(std::span(buf).first(31)));
  CmRejectData j;
  j.sts.set(static_cast<std::uint16_t>(CmRejectStatus::InvalidHsqsize));
  EXPECT_EQ(bytes_of(j)[2], 0x04);
  EXPECT_EQ(to_string(CmRejectStatus::NoResources), "no resources");
}

TEST(NvmeCapsule, ShortCapsuleIsRefusedWithAReason) {
  std::vector<std::byte> b(63);
  CapsuleError why{};
  EXPECT_FALSE(parse_command_capsule(b, &why));
  EXPECT_EQ(why, CapsuleError::TooShort);
  b.resize(64 + 512);
  const auto c = parse_command_capsule(b);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->data.size(), 512u);
}

TEST(NvmeCapsule, DescribeNamesOpcodeCidNsidSlbaLength) {
  Sqe s;
  s.opc = 0x02;
  s.flags = kPsdtSgl;
  s.cid.set(42);
  s.nsid.set(1);
  s.cdw10.set(0x10);
  s.cdw11.set(0x1);
  s.cdw12.set(7);
  s.sgl1 = SglDescriptor::keyed(0xABC000, 4096, 0x1234, true);
  EXPECT_EQ(describe_command(s, QueueKind::Io),
            "NVMe Read opc=0x02 cid=42 nsid=1 slba=4294967312 nlb=8 sgl=keyed+inv addr=0xabc000 len=4096 key=0x1234");
  EXPECT_EQ(describe_command(s, QueueKind::Admin).substr(0, 15), "NVMe GetLogPage");
  EXPECT_EQ(describe_command(s, QueueKind::Unknown).substr(0, 20), "NVMe Read|GetLogPage");
  ConnectCommand c;
  c.qid.set(2);
  c.sqsize.set(31);
  const auto cs = overlay<Sqe>(c);
  EXPECT_EQ(describe_command(cs, QueueKind::Unknown).substr(0, 48), "NVMe Fabrics Connect opc=0x7f cid=0 qid=2 sqsize");
  Cqe r;
  r.cid.set(42);
  r.status.set(generic_error(sc::kInvalidNamespace).field());
  EXPECT_EQ(describe_response(r),
            "NVMe response cid=42 sqid=0 sqhd=0 dw0=0x0 sct 0 sc 0x0b (invalid namespace or format) dnr");
}

TEST(NvmeIdentify, StringFieldsPadAsTheSpecSays) {
  IdentifyController id;
  set_fixed_string(id.sn, "1234", ' ');
  EXPECT_EQ(id.sn[4], ' ');
  EXPECT_EQ(id.sn[19], ' ');
  DiscoveryLogEntry e;
  set_fixed_string(e.trsvcid, "4420", ' ');
  EXPECT_EQ(bytes_of(e)[32 + 3], '0');
  EXPECT_EQ(bytes_of(e)[32 + 4], ' ');
}

}  // namespace
}  // namespace roce::proto::nvme::nvme_test
