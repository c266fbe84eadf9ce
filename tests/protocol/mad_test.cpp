// CM MAD wire formats: every field sits at the offset and bits IBA chapter 12 gives it, the
// accessors touch nothing else, the parser refuses what it must with the right reason, and the
// rdma_cm Service ID / cma_hdr and the UD-to-QP1 frame come out as Linux writes them.
#include <gtest/gtest.h>

#include <cstddef>
#include <random>
#include <set>
#include <vector>

#include "protocol/class_port_info.hpp"
#include "protocol/cm_alternate_path.hpp"
#include "protocol/cm_connect.hpp"
#include "protocol/cm_disconnect.hpp"
#include "protocol/cm_reject.hpp"
#include "protocol/cm_sidr.hpp"
#include "protocol/cma_header.hpp"
#include "protocol/gsi.hpp"
#include "protocol/mad_parser.hpp"
#include "protocol/parser.hpp"

namespace roce::proto::mad_test {
namespace {

// Offsets from IBA tables 106-120 (as the kernel's ibta_vol1_c12.h lists them).
static_assert(offsetof(CmReq, service_id) == 8);
static_assert(offsetof(CmReq, local_ca_guid) == 16);
static_assert(offsetof(CmReq, local_qkey) == 28);
static_assert(offsetof(CmReq, qpn_word) == 32);
static_assert(offsetof(CmReq, eecn_word) == 36);
static_assert(offsetof(CmReq, remote_eecn_word) == 40);
static_assert(offsetof(CmReq, psn_word) == 44);
static_assert(offsetof(CmReq, partition_key) == 48);
static_assert(offsetof(CmReq, mtu_byte) == 50);
static_assert(offsetof(CmReq, retry_byte) == 51);
static_assert(offsetof(CmReq, primary) == 52);
static_assert(offsetof(CmReq, primary) + offsetof(CmReqPath, local_gid) == 56);
static_assert(offsetof(CmReq, primary) + offsetof(CmReqPath, remote_gid) == 72);
static_assert(offsetof(CmReq, primary) + offsetof(CmReqPath, flow_label_word) == 88);
static_assert(offsetof(CmReq, primary) + offsetof(CmReqPath, traffic_class) == 92);
static_assert(offsetof(CmReq, primary) + offsetof(CmReqPath, hop_limit) == 93);
static_assert(offsetof(CmReq, primary) + offsetof(CmReqPath, sl_byte) == 94);
static_assert(offsetof(CmReq, primary) + offsetof(CmReqPath, ack_byte) == 95);
static_assert(offsetof(CmReq, alternate) == 96);
static_assert(offsetof(CmReq, private_data) == 140);
static_assert(offsetof(CmRep, qpn_word) == 12);
static_assert(offsetof(CmRep, psn_word) == 20);
static_assert(offsetof(CmRep, responder_resources) == 24);
static_assert(offsetof(CmRep, ack_delay_byte) == 26);
static_assert(offsetof(CmRep, rnr_byte) == 27);
static_assert(offsetof(CmRep, local_ca_guid) == 28);
static_assert(offsetof(CmRep, private_data) == 36);
static_assert(offsetof(CmRtu, private_data) == 8);
static_assert(offsetof(CmMra, timeout_byte) == 9);
static_assert(offsetof(CmMra, private_data) == 10);
static_assert(offsetof(CmRej, reason) == 10);
static_assert(offsetof(CmRej, ari) == 12);
static_assert(offsetof(CmRej, private_data) == 84);
static_assert(offsetof(CmDreq, qpn_word) == 8);
static_assert(offsetof(CmDreq, private_data) == 12);
static_assert(offsetof(CmDrep, private_data) == 8);
static_assert(offsetof(CmSidrReq, service_id) == 8);
static_assert(offsetof(CmSidrReq, private_data) == 16);
static_assert(offsetof(CmSidrRep, qpn_word) == 8);
static_assert(offsetof(CmSidrRep, service_id) == 12);
static_assert(offsetof(CmSidrRep, qkey) == 20);
static_assert(offsetof(CmSidrRep, additional_info) == 24);
static_assert(offsetof(CmSidrRep, private_data) == 96);
static_assert(offsetof(CmLap, qpn_word) == 12);
static_assert(offsetof(CmLap, alt_local_gid) == 24);
static_assert(offsetof(CmLap, flow_label_word) == 56);
static_assert(offsetof(CmLap, ack_byte) == 63);
static_assert(offsetof(CmLap, private_data) == 64);
static_assert(offsetof(CmApr, ap_status) == 9);
static_assert(offsetof(CmApr, additional_info) == 12);
static_assert(offsetof(CmApr, private_data) == 84);
static_assert(offsetof(ClassPortInfo, redirect_gid) == 8);
static_assert(offsetof(ClassPortInfo, redirect_qp_word) == 32);
static_assert(offsetof(ClassPortInfo, trap_gid) == 40);
static_assert(offsetof(ClassPortInfo, trap_qkey) == 68);
static_assert(offsetof(MadHeader, transaction_id) == 8);
static_assert(offsetof(MadHeader, attribute_id) == 16);
static_assert(offsetof(MadHeader, attribute_modifier) == 20);

template <typename T>
std::vector<std::uint8_t> bytes_of(const T& v) {
  std::vector<std::uint8_t> out(sizeof v);
  std::memcpy(out.data(), &v, sizeof v);
  return out;
}

template <typename T>
std::vector<std::uint8_t> slice(const T& v, std::size_t off, std::size_t n) {
  const auto all = bytes_of(v);
  return {all.begin() + static_cast<std::ptrdiff_t>(off), all.begin() + static_cast<std::ptrdiff_t>(off + n)};
}

using Bytes = std::vector<std::uint8_t>;

TEST(CmReqLayout, BitPackedFieldsLandWhereTheCaptureHasThem) {
  // The ConnectX REQ of connectx_rdma_cm_write.pcap, field by field: bytes 32..51 of its CM
  // payload are 00 01 37 01 | 00 00 00 01 | 00 00 00 b0 | 9f 93 1b b0 | ff ff 37 f0.
  CmReq req{};
  req.set_local_qpn(0x137);
  req.set_responder_resources(1);
  req.set_initiator_depth(1);
  req.set_remote_cm_response_timeout(22);
  req.set_transport(CmTransport::Rc);
  req.set_starting_psn(0x9F931B);
  req.set_local_cm_response_timeout(22);
  req.set_retry_count(0);
  req.partition_key.set(0xFFFF);
  req.set_path_mtu(3);
  req.set_rnr_retry_count(7);
  req.set_max_cm_retries(15);
  EXPECT_EQ(slice(req, 32, 20), (Bytes{0x00, 0x01, 0x37, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0xb0,
                                       0x9f, 0x93, 0x1b, 0xb0, 0xff, 0xff, 0x37, 0xf0}));
  req.primary.local_lid.set(0xFFFF);
  req.primary.remote_lid.set(0xFFFF);
  req.primary.local_gid = gid_from_ipv4({172, 17, 242, 47});
  req.primary.set_packet_rate(7);
  req.primary.hop_limit = 64;
  req.primary.set_local_ack_timeout(19);
  EXPECT_EQ(slice(req, 52, 4), (Bytes{0xff, 0xff, 0xff, 0xff}));
  EXPECT_EQ(slice(req, 66, 6), (Bytes{0xff, 0xff, 172, 17, 242, 47}));
  EXPECT_EQ(slice(req, 88, 8), (Bytes{0x00, 0x00, 0x00, 0x07, 0x00, 0x40, 0x00, 0x98}));
}

TEST(CmReqLayout, FlowLabelIsTheTop20BitsOfItsWord) {
  // rxe's flow label 0xB4EC6 with packet rate 0 is b4 ec 60 00 on the wire (rdma-cm.md 4.1).
  CmReqPath p{};
  p.set_flow_label(0xB4EC6);
  EXPECT_EQ(slice(p, 36, 4), (Bytes{0xb4, 0xec, 0x60, 0x00}));  // REQ byte 88 = path byte 36
  p.set_packet_rate(0x3F);
  EXPECT_EQ(p.flow_label(), 0xB4EC6u);
  EXPECT_EQ(p.packet_rate(), 0x3F);
  p.set_sl(0xF);
  p.set_subnet_local(true);
  EXPECT_EQ(p.sl_byte, 0xF8);
}

TEST(CmReqLayout, TransportFlowControlSrqAndSapBits) {
  CmReq req{};
  req.set_remote_cm_response_timeout(0x1F);
  req.set_transport(CmTransport::Extended);
  req.set_end_to_end_flow_control(true);
  EXPECT_EQ(slice(req, 43, 1), (Bytes{0xFF}));
  req.set_transport(CmTransport::Uc);
  EXPECT_EQ(slice(req, 43, 1), (Bytes{0xFB}));
  req.set_srq(true);
  req.set_extended_transport(kCmExtendedTransportXrc);
  EXPECT_EQ(slice(req, 51, 1), (Bytes{0x09}));
  req.set_rdc_exists(true);
  EXPECT_EQ(slice(req, 50, 1), (Bytes{0x08}));
  req.set_sap_supported(true);
  req.alternate.set_local_ack_timeout(19);
  EXPECT_EQ(slice(req, 139, 1), (Bytes{0x9C}));
  EXPECT_TRUE(req.sap_supported());
  EXPECT_FALSE(req.has_alternate_path());
  req.alternate.local_lid.set(3);
  EXPECT_TRUE(req.has_alternate_path());
}

// Property: setting one sub-field to any value reads back as that value cut to the width and
// leaves every other byte of the message untouched.
template <typename Msg, typename Set, typename Get>
void check_field(const char* name, unsigned width, Set set, Get get) {
  std::mt19937_64 rng(4791);
  for (int i = 0; i < 200; ++i) {
    Msg m;
    auto* raw = reinterpret_cast<std::uint8_t*>(&m);
    for (std::size_t b = 0; b < sizeof m; ++b) raw[b] = static_cast<std::uint8_t>(rng());
    const Msg before = m;
    const std::uint64_t v = rng();
    set(m, v);
    const std::uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
    ASSERT_EQ(static_cast<std::uint64_t>(get(m)), v & mask) << name;
    // Set the field back and the whole message is as before.
    set(m, get(before));
    ASSERT_EQ(std::memcmp(&m, &before, sizeof m), 0) << name << " touched other bits";
  }
}

TEST(CmFieldAccessors, EachSubFieldRoundTripsAndTouchesNothingElse) {
  check_field<CmReq>("local_qpn", 24, [](CmReq& m, auto v) { m.set_local_qpn(static_cast<std::uint32_t>(v)); },
                     [](const CmReq& m) { return m.local_qpn(); });
  check_field<CmReq>("responder_resources", 8, [](CmReq& m, auto v) { m.set_responder_resources(static_cast<std::uint8_t>(v)); },
                     [](const CmReq& m) { return m.responder_resources(); });
  check_field<CmReq>("initiator_depth", 8, [](CmReq& m, auto v) { m.set_initiator_depth(static_cast<std::uint8_t>(v)); },
                     [](const CmReq& m) { return m.initiator_depth(); });
  check_field<CmReq>("remote_eecn", 24, [](CmReq& m, auto v) { m.set_remote_eecn(static_cast<std::uint32_t>(v)); },
                     [](const CmReq& m) { return m.remote_eecn(); });
  check_field<CmReq>("remote_cm_response_timeout", 5,
                     [](CmReq& m, auto v) { m.set_remote_cm_response_timeout(static_cast<std::uint8_t>(v)); },
                     [](const CmReq& m) { return m.remote_cm_response_timeout(); });
  check_field<CmReq>("transport", 2, [](CmReq& m, auto v) { m.set_transport(static_cast<CmTransport>(v & 3)); },
                     [](const CmReq& m) { return static_cast<unsigned>(m.transport()); });
  check_field<CmReq>("e2e", 1, [](CmReq& m, auto v) { m.set_end_to_end_flow_control(v & 1); },
                     [](const CmReq& m) { return m.end_to_end_flow_control(); });
  check_field<CmReq>("starting_psn", 24, [](CmReq& m, auto v) { m.set_starting_psn(static_cast<std::uint32_t>(v)); },
                     [](const CmReq& m) { return m.starting_psn(); });
  check_field<CmReq>("local_cm_response_timeout", 5,
                     [](CmReq& m, auto v) { m.set_local_cm_response_timeout(static_cast<std::uint8_t>(v)); },
                     [](const CmReq& m) { return m.local_cm_response_timeout(); });
  check_field<CmReq>("retry_count", 3, [](CmReq& m, auto v) { m.set_retry_count(static_cast<std::uint8_t>(v)); },
                     [](const CmReq& m) { return m.retry_count(); });
  check_field<CmReq>("path_mtu", 4, [](CmReq& m, auto v) { m.set_path_mtu(static_cast<std::uint8_t>(v)); },
                     [](const CmReq& m) { return m.path_mtu(); });
  check_field<CmReq>("rnr_retry_count", 3, [](CmReq& m, auto v) { m.set_rnr_retry_count(static_cast<std::uint8_t>(v)); },
                     [](const CmReq& m) { return m.rnr_retry_count(); });
  check_field<CmReq>("max_cm_retries", 4, [](CmReq& m, auto v) { m.set_max_cm_retries(static_cast<std::uint8_t>(v)); },
                     [](const CmReq& m) { return m.max_cm_retries(); });
  check_field<CmReq>("extended_transport", 3, [](CmReq& m, auto v) { m.set_extended_transport(static_cast<std::uint8_t>(v)); },
                     [](const CmReq& m) { return m.extended_transport(); });
  check_field<CmReq>("vendor_id", 24, [](CmReq& m, auto v) { m.set_vendor_id(static_cast<std::uint32_t>(v)); },
                     [](const CmReq& m) { return m.vendor_id(); });
  check_field<CmReq>("primary.flow_label", 20, [](CmReq& m, auto v) { m.primary.set_flow_label(static_cast<std::uint32_t>(v)); },
                     [](const CmReq& m) { return m.primary.flow_label(); });
  check_field<CmReq>("primary.packet_rate", 6, [](CmReq& m, auto v) { m.primary.set_packet_rate(static_cast<std::uint8_t>(v)); },
                     [](const CmReq& m) { return m.primary.packet_rate(); });
  check_field<CmReq>("primary.sl", 4, [](CmReq& m, auto v) { m.primary.set_sl(static_cast<std::uint8_t>(v)); },
                     [](const CmReq& m) { return m.primary.sl(); });
  check_field<CmReq>("primary.local_ack_timeout", 5,
                     [](CmReq& m, auto v) { m.primary.set_local_ack_timeout(static_cast<std::uint8_t>(v)); },
                     [](const CmReq& m) { return m.primary.local_ack_timeout(); });
  check_field<CmRep>("rep.local_qpn", 24, [](CmRep& m, auto v) { m.set_local_qpn(static_cast<std::uint32_t>(v)); },
                     [](const CmRep& m) { return m.local_qpn(); });
  check_field<CmRep>("rep.starting_psn", 24, [](CmRep& m, auto v) { m.set_starting_psn(static_cast<std::uint32_t>(v)); },
                     [](const CmRep& m) { return m.starting_psn(); });
  check_field<CmRep>("rep.target_ack_delay", 5, [](CmRep& m, auto v) { m.set_target_ack_delay(static_cast<std::uint8_t>(v)); },
                     [](const CmRep& m) { return m.target_ack_delay(); });
  check_field<CmRep>("rep.failover", 2, [](CmRep& m, auto v) { m.set_failover_accepted(static_cast<std::uint8_t>(v)); },
                     [](const CmRep& m) { return m.failover_accepted(); });
  check_field<CmRep>("rep.rnr_retry_count", 3, [](CmRep& m, auto v) { m.set_rnr_retry_count(static_cast<std::uint8_t>(v)); },
                     [](const CmRep& m) { return m.rnr_retry_count(); });
  check_field<CmRep>("rep.srq", 1, [](CmRep& m, auto v) { m.set_srq(v & 1); }, [](const CmRep& m) { return m.srq(); });
  check_field<CmRej>("rej.ari_length", 7, [](CmRej& m, auto v) { m.set_reject_info_length(static_cast<std::uint8_t>(v)); },
                     [](const CmRej& m) { return m.reject_info_length(); });
  check_field<CmMra>("mra.service_timeout", 5, [](CmMra& m, auto v) { m.set_service_timeout(static_cast<std::uint8_t>(v)); },
                     [](const CmMra& m) { return m.service_timeout(); });
  check_field<CmDreq>("dreq.remote_qpn", 24, [](CmDreq& m, auto v) { m.set_remote_qpn(static_cast<std::uint32_t>(v)); },
                      [](const CmDreq& m) { return m.remote_qpn(); });
  check_field<CmSidrRep>("sidr_rep.qpn", 24, [](CmSidrRep& m, auto v) { m.set_qpn(static_cast<std::uint32_t>(v)); },
                         [](const CmSidrRep& m) { return m.qpn(); });
  check_field<CmLap>("lap.remote_qpn", 24, [](CmLap& m, auto v) { m.set_remote_qpn(static_cast<std::uint32_t>(v)); },
                     [](const CmLap& m) { return m.remote_qpn(); });
  check_field<CmLap>("lap.traffic_class", 8, [](CmLap& m, auto v) { m.set_traffic_class(static_cast<std::uint8_t>(v)); },
                     [](const CmLap& m) { return m.traffic_class(); });
  check_field<CmLap>("lap.flow_label", 20, [](CmLap& m, auto v) { m.set_flow_label(static_cast<std::uint32_t>(v)); },
                     [](const CmLap& m) { return m.flow_label(); });
  check_field<ClassPortInfo>("cpi.resp_time", 5,
                             [](ClassPortInfo& m, auto v) { m.set_resp_time_value(static_cast<std::uint8_t>(v)); },
                             [](const ClassPortInfo& m) { return m.resp_time_value(); });
  check_field<ClassPortInfo>("cpi.cap2", 27, [](ClassPortInfo& m, auto v) { m.set_capability_mask2(static_cast<std::uint32_t>(v)); },
                             [](const ClassPortInfo& m) { return m.capability_mask2(); });
}

TEST(CmRepLayout, ConnectXRepBytes) {
  // connectx_rdma_cm_write.pcap's REP: QPN 0x167, PSN 0xbee37a, RR 1, ID 1, target ACK delay
  // 16, RNR retry 7 -> bytes 12..27 = 00 01 67 00 | 00 00 00 00 | be e3 7a 00 | 01 01 80 e0.
  CmRep rep{};
  rep.set_local_qpn(0x167);
  rep.set_starting_psn(0xBEE37A);
  rep.responder_resources = 1;
  rep.initiator_depth = 1;
  rep.set_target_ack_delay(16);
  rep.set_rnr_retry_count(7);
  EXPECT_EQ(slice(rep, 12, 16), (Bytes{0x00, 0x01, 0x67, 0x00, 0, 0, 0, 0, 0xbe, 0xe3, 0x7a, 0x00, 0x01, 0x01, 0x80, 0xe0}));
}

TEST(CmRejLayout, MessageRejectedAndInfoLength) {
  CmRej rej{};
  rej.set_message_rejected(CmMessage::Rep);
  rej.set_reject_info_length(8);
  rej.set_reason(RejReason::Timeout);
  EXPECT_EQ(slice(rej, 8, 4), (Bytes{0x40, 0x10, 0x00, 0x04}));
  EXPECT_EQ(rej.message_rejected(), CmMessage::Rep);
  CmMra mra{};
  mra.set_message_mraed(CmMessage::Other);
  mra.set_service_timeout(24);
  EXPECT_EQ(slice(mra, 8, 2), (Bytes{0x80, 0xC0}));
}

Mad mad_of(CmAttribute attr, MadMethod method = MadMethod::Send) {
  std::array<std::uint8_t, kMadDataBytes> zero{};
  return make_mad(MadHeader::cm(attr, 0x0000000b2975ef71, method), zero);
}

TEST(MadParser, AcceptsEveryCmAttributeWithItsMethod) {
  for (std::uint16_t id = 0x10; id <= 0x1A; ++id) {
    const auto attr = static_cast<CmAttribute>(id);
    const Mad m = mad_of(attr);
    ParsedMad p;
    ASSERT_EQ(parse_mad(m, p), MadError::None) << to_string(attr);
    EXPECT_EQ(p.attribute, attr);
    EXPECT_EQ(p.header.tid(), 0x0000000b2975ef71u);
    EXPECT_EQ(p.data.size(), kMadDataBytes);
    EXPECT_EQ(p.data.data(), m.data() + kMadHeaderBytes);
  }
  for (auto method : {MadMethod::Get, MadMethod::Set, MadMethod::GetResp}) {
    ParsedMad p;
    EXPECT_EQ(parse_mad(mad_of(CmAttribute::ClassPortInfo, method), p), MadError::None) << to_string(method);
  }
}

TEST(MadParser, RefusesEachMalformedMadWithItsReason) {
  ParsedMad p;
  Mad good = mad_of(CmAttribute::Req);
  EXPECT_EQ(parse_mad(ByteSpan(good).first(23), p), MadError::Truncated);
  EXPECT_FALSE(p.has_header);
  EXPECT_EQ(parse_mad(ByteSpan(good).first(255), p), MadError::Truncated);
  EXPECT_TRUE(p.has_header);
  std::vector<std::byte> longer(good.begin(), good.end());
  longer.push_back(std::byte{0});
  EXPECT_EQ(parse_mad(longer, p), MadError::WrongLength);

  auto with = [&](std::size_t off, std::uint8_t v) {
    Mad m = good;
    m[off] = std::byte{v};
    return m;
  };
  EXPECT_EQ(parse_mad(with(0, 2), p), MadError::BadBaseVersion);
  EXPECT_EQ(parse_mad(with(1, 0x81), p), MadError::NotCmClass);
  EXPECT_EQ(parse_mad(with(2, 1), p), MadError::BadClassVersion);
  EXPECT_EQ(parse_mad(with(17, 0x1B), p), MadError::UnknownAttribute);
  EXPECT_EQ(parse_mad(with(17, 0x02), p), MadError::UnknownAttribute);
  EXPECT_EQ(parse_mad(with(3, 0x01), p), MadError::UnsupportedMethod);  // Get(REQ)
  EXPECT_TRUE(p.has_header);
  EXPECT_EQ(p.header.method(), MadMethod::Get);
  EXPECT_EQ(parse_mad(mad_of(CmAttribute::ClassPortInfo, MadMethod::Send), p), MadError::UnsupportedMethod);

  const Mad rej = mad_of(CmAttribute::Rej);
  Mad bad = rej;
  bad[kMadHeaderBytes + 8] = std::byte{0xC0};  // message rejected = 3
  EXPECT_EQ(parse_mad(bad, p), MadError::ReservedValue);
  bad = rej;
  bad[kMadHeaderBytes + 9] = std::byte{73 << 1};
  EXPECT_EQ(parse_mad(bad, p), MadError::InfoLengthTooLarge);
  bad[kMadHeaderBytes + 9] = std::byte{72 << 1};
  EXPECT_EQ(parse_mad(bad, p), MadError::None);
  bad = mad_of(CmAttribute::Mra);
  bad[kMadHeaderBytes + 8] = std::byte{0xC0};
  EXPECT_EQ(parse_mad(bad, p), MadError::ReservedValue);
  bad = mad_of(CmAttribute::SidrRep);
  bad[kMadHeaderBytes + 5] = std::byte{73};
  EXPECT_EQ(parse_mad(bad, p), MadError::InfoLengthTooLarge);
  bad = mad_of(CmAttribute::Apr);
  bad[kMadHeaderBytes + 8] = std::byte{73};
  EXPECT_EQ(parse_mad(bad, p), MadError::InfoLengthTooLarge);
}

TEST(MadParser, NeverReadsOutsideItsSpanOnRandomInput) {
  std::mt19937 rng(7174);
  std::array<std::size_t, static_cast<std::size_t>(MadError::Count)> seen{};
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::byte> buf(rng() % 300);
    for (auto& b : buf) b = std::byte(rng());
    if (buf.size() >= 4 && rng() % 2) {  // often a plausible CM header, so deeper checks run
      buf[0] = std::byte{1};
      buf[1] = std::byte{7};
      buf[2] = std::byte{2};
      buf[3] = std::byte{3};
      if (buf.size() >= 18) buf[16] = std::byte{0};
    }
    ParsedMad p;
    const MadError e = parse_mad(buf, p);
    ++seen[static_cast<std::size_t>(e)];
    if (e == MadError::None) {
      ASSERT_EQ(p.data.size(), kMadDataBytes);
    }
  }
  EXPECT_GT(seen[static_cast<std::size_t>(MadError::None)], 0u);
  EXPECT_GT(seen[static_cast<std::size_t>(MadError::Truncated)], 0u);
}

TEST(RdmaServiceId, PortSpacesAndPorts) {
  EXPECT_EQ(rdma_service_id(RdmaPortSpace::Tcp, 7174), 0x0000000001061C06u);
  EXPECT_EQ(rdma_service_id(RdmaPortSpace::Udp, 7174), 0x0000000001111C06u);
  EXPECT_EQ(rdma_service_id(RdmaPortSpace::Ib, 7471), 0x00000000013F1D2Fu);
  EXPECT_EQ(rdma_service_id(RdmaPortSpace::Ipoib, 1), 0x0000000000020001u);
  const auto s = rdma_service_of(0x0000000001063039);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->port_space, RdmaPortSpace::Tcp);
  EXPECT_EQ(s->port, 12345);
  EXPECT_FALSE(rdma_service_of(0x1000000001063039));  // not an rdma_cm Service ID
}

TEST(CmaHeader, Ipv4AsCmaCWritesIt) {
  CmaAddressing a;
  a.src = IpAddress::of(Ipv4Addr{10, 77, 0, 3});
  a.dst = IpAddress::of(Ipv4Addr{10, 77, 0, 2});
  a.src_port = 0xDF2D;
  std::array<std::uint8_t, 56> pd{};
  ASSERT_TRUE(write_cma_header(a, pd));
  // rxe's REQ: 00 40 df 2d | 12 x 0, 0a 4d 00 03 | 12 x 0, 0a 4d 00 02 (rdma-cm.md 5.2).
  const Bytes head{0x00, 0x40, 0xdf, 0x2d};
  EXPECT_EQ(Bytes(pd.begin(), pd.begin() + 4), head);
  EXPECT_EQ(Bytes(pd.begin() + 4, pd.begin() + 16), Bytes(12, 0));
  EXPECT_EQ(Bytes(pd.begin() + 16, pd.begin() + 20), (Bytes{10, 77, 0, 3}));
  EXPECT_EQ(Bytes(pd.begin() + 32, pd.begin() + 36), (Bytes{10, 77, 0, 2}));
  CmaAddressing back;
  ASSERT_EQ(parse_cma_header(pd, back), CmaHeaderError::None);
  EXPECT_EQ(back.src, a.src);
  EXPECT_EQ(back.dst, a.dst);
  EXPECT_EQ(back.src_port, 0xDF2D);
}

TEST(CmaHeader, Ipv6AndRefusals) {
  CmaAddressing a;
  Ipv6Addr s{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  Ipv6Addr d{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  a.src = IpAddress::of(s);
  a.dst = IpAddress::of(d);
  a.src_port = 40000;
  std::array<std::uint8_t, kCmaHeaderBytes> pd{};
  ASSERT_TRUE(write_cma_header(a, pd));
  EXPECT_EQ(pd[1], 0x60);
  CmaAddressing back;
  ASSERT_EQ(parse_cma_header(pd, back), CmaHeaderError::None);
  EXPECT_EQ(back.src, a.src);
  EXPECT_EQ(back.dst, a.dst);
  EXPECT_EQ(parse_cma_header(std::span(pd).first(35), back), CmaHeaderError::TooShort);
  auto bad = pd;
  bad[0] = 1;
  EXPECT_EQ(parse_cma_header(bad, back), CmaHeaderError::BadVersion);
  bad = pd;
  bad[1] = 0x50;
  EXPECT_EQ(parse_cma_header(bad, back), CmaHeaderError::BadIpVersion);
  std::array<std::uint8_t, 35> small{};
  EXPECT_FALSE(write_cma_header(a, small));
}

GsiRoute v4_route() {
  GsiRoute r;
  r.eth.src = {0x08, 0xc0, 0xeb, 0xda, 0xe2, 0xe6};
  r.eth.dst = {0x08, 0xc0, 0xeb, 0xda, 0xe2, 0xca};
  r.ipv4.src = {172, 17, 242, 47};
  r.ipv4.dst = {172, 17, 242, 56};
  r.udp_src_port = 50939;
  return r;
}

TEST(GsiFrame, UdSendOnlyToQp1WithTheGsiQkey) {
  Mad mad = mad_of(CmAttribute::Rtu);
  std::array<std::byte, 512> buf{};
  const FrameLayout l = build_gsi_frame(v4_route(), 7, mad, buf);
  ASSERT_TRUE(l.ok()) << to_string(l.error);
  EXPECT_EQ(l.length, 14u + 308u + 0u);  // IPv4 total length 308 (rdma-cm.md 1)
  Packet p;
  ASSERT_EQ(parse_frame(ByteSpan(buf).first(l.length), ParseOptions{}, p), ParseError::None);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
  EXPECT_EQ(p.udp_length, 288);
  EXPECT_EQ(p.opcode(), 0x64);
  EXPECT_EQ(p.dest_qp(), 1u);
  EXPECT_EQ(p.psn(), 7u);
  EXPECT_EQ(p.bth.pkey.get(), 0xFFFF);
  EXPECT_EQ(p.ext.deth.qkey.get(), kGsiQkey);
  EXPECT_EQ(p.ext.deth.source_qp(), 1u);
  EXPECT_EQ(check_gsi_packet(p), GsiError::None);
  ASSERT_EQ(p.payload.size(), kMadBytes);
  EXPECT_EQ(std::memcmp(p.payload.data(), mad.data(), kMadBytes), 0);
}

TEST(GsiFrame, Ipv6Route) {
  GsiRoute r = v4_route();
  r.ip_version = IpVersion::V6;
  r.ipv6.src = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  r.ipv6.dst = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  std::array<std::byte, 512> buf{};
  const FrameLayout l = build_gsi_frame(r, 0, mad_of(CmAttribute::Req), buf);
  ASSERT_TRUE(l.ok());
  Packet p;
  ASSERT_EQ(parse_frame(ByteSpan(buf).first(l.length), ParseOptions{}, p), ParseError::None);
  EXPECT_EQ(p.ip_version, IpVersion::V6);
  EXPECT_EQ(check_gsi_packet(p), GsiError::None);
}

TEST(GsiFrame, ChecksRefuseWhatQp1MustNotTake) {
  std::array<std::byte, 512> buf{};
  auto parsed = [&](const FrameSpec& spec, std::size_t payload) {
    std::vector<std::byte> body(payload);
    const FrameLayout l = build_frame(spec, body, buf, CrcBackend::Isal);
    EXPECT_TRUE(l.ok());
    Packet p;
    EXPECT_EQ(parse_frame(ByteSpan(buf).first(l.length), ParseOptions{}, p), ParseError::None);
    return p;
  };
  const FrameSpec good = gsi_frame_spec(v4_route(), 0);
  EXPECT_EQ(check_gsi_packet(parsed(good, 256)), GsiError::None);
  EXPECT_EQ(check_gsi_packet(parsed(good, 252)), GsiError::WrongLength);
  EXPECT_EQ(check_gsi_packet(parsed(good, 260)), GsiError::WrongLength);
  FrameSpec s = good;
  s.ext.deth.qkey.set(0x80010001);
  EXPECT_EQ(check_gsi_packet(parsed(s, 256)), GsiError::BadQkey);
  s = good;
  s.bth.dest_qp.set(2);
  EXPECT_EQ(check_gsi_packet(parsed(s, 256)), GsiError::NotQp1);
  s = good;
  s.bth.pkey.set(0x1234);
  EXPECT_EQ(check_gsi_packet(parsed(s, 256)), GsiError::BadPkey);
  s.bth.pkey.set(0x7FFF);  // limited member of the default partition still reaches QP1
  EXPECT_EQ(check_gsi_packet(parsed(s, 256)), GsiError::None);
  s = good;
  s.bth.opcode = raw(Opcode::UdSendOnlyImm);
  EXPECT_EQ(check_gsi_packet(parsed(s, 256)), GsiError::NotUdSend);
}

TEST(CmNames, EveryEnumValueHasADistinctName) {
  std::set<std::string> attrs, dissector;
  for (std::uint16_t id : {0x01, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A}) {
    attrs.insert(cm_attribute_name(id));
    dissector.insert(cm_attribute_dissector_name(id));
  }
  EXPECT_EQ(attrs.size(), 12u);
  EXPECT_EQ(dissector.size(), 12u);
  EXPECT_EQ(cm_attribute_name(0x1B), "0x001b");
  EXPECT_EQ(cm_attribute_dissector_name(0x1B), "(Unknown CM Attribute)");
  std::set<std::string> reasons;
  for (std::uint16_t r = 1; r <= 35; ++r) {
    if (r == 34) {
      EXPECT_FALSE(rej_reason_name(r));
      continue;
    }
    ASSERT_TRUE(rej_reason_name(r)) << r;
    reasons.insert(*rej_reason_name(r));
  }
  EXPECT_EQ(reasons.size(), 34u);
  EXPECT_EQ(to_string(RejReason::InvalidServiceId), "invalid service ID (8)");
  EXPECT_EQ(to_string(RejReason::ConsumerDefined), "consumer defined (28)");
  EXPECT_EQ(to_string(RejReason::Timeout), "timeout (4)");
  EXPECT_EQ(to_string(RejReason::StaleConnection), "stale connection (10)");
  EXPECT_EQ(rej_reason_to_string(34), "reason 34");
  std::set<std::string> errors;
  for (unsigned e = 0; e < static_cast<unsigned>(MadError::Count); ++e) errors.insert(to_string(static_cast<MadError>(e)));
  EXPECT_EQ(errors.size(), static_cast<std::size_t>(MadError::Count));
  std::set<std::string> gsi;
  for (unsigned e = 0; e < static_cast<unsigned>(GsiError::Count); ++e) gsi.insert(to_string(static_cast<GsiError>(e)));
  EXPECT_EQ(gsi.size(), static_cast<std::size_t>(GsiError::Count));
  std::set<std::string> sidr, apr;
  for (std::uint8_t s = 0; s <= 5; ++s) sidr.insert(to_string(static_cast<SidrStatus>(s)));
  for (std::uint8_t s = 0; s <= 13; ++s) apr.insert(to_string(static_cast<AprStatus>(s)));
  EXPECT_EQ(sidr.size(), 6u);
  EXPECT_EQ(apr.size(), 14u);
  EXPECT_EQ(to_string(RdmaPortSpace::Tcp), "TCP");
  EXPECT_EQ(to_string(CmTransport::Rc), "RC");
  EXPECT_EQ(to_string(CmMessage::Rep), "REP");
  EXPECT_EQ(to_string(MadMethod::GetResp), "GetResp");
  EXPECT_EQ(to_string(MadStatus::UnsupportedMethodAttribute), "unsupported-method-attribute");
  EXPECT_EQ(to_string(CmaHeaderError::BadVersion), "bad-cma-version");
  EXPECT_EQ(gid_to_string(gid_from_ipv4({10, 0, 0, 1})), "10.0.0.1");
}

}  // namespace
}  // namespace roce::proto::mad_test
