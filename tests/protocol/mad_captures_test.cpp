// The CM MADs of the real rdma_cm captures in ../shared/captures (ConnectX: REQ, REP, RTU,
// DREQ, DREP per file) go through the GSI check and the MAD parser, every field decodes to
// what the capture holds, and the REQ and REP we build from those values are the captured
// bytes. The rxe captures hold no QP1 traffic (perftest's TCP exchange, not -R), so only the
// ConnectX ones are here; tshark's own decoding of the same MADs is compared in
// mad_tshark_xcheck_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "protocol/cm_connect.hpp"
#include "protocol/cm_disconnect.hpp"
#include "protocol/cma_header.hpp"
#include "protocol/gsi.hpp"
#include "protocol/mad_parser.hpp"
#include "protocol/parser.hpp"
#include "tests/support/captures_dir.hpp"
#include "tests/support/capture_file.hpp"

namespace roce::proto::mad_captures_test {
namespace {

// Values read with tshark 4.0.17 (Debian 12), one run per file:
//   tshark -r F -Y infiniband.cm.req -T fields -e infiniband.cm.req -e infiniband.cm.req.localqpn ...
// except the packet rate, which tshark 4.0 misreads (it shows 0 for the word 00 00 00 07):
// that one is from the bytes (rdma-cm.md 4.1).
struct ExpectedConnection {
  const char* file;
  std::uint64_t tid;
  std::uint32_t active_comm_id, passive_comm_id;
  std::uint64_t service_id;
  std::uint32_t req_qpn, req_psn;
  std::uint8_t req_rr, req_id, req_retry, req_rnr;
  std::uint16_t cma_src_port;
  std::uint32_t rep_qpn, rep_psn;
  std::uint8_t rep_rr, rep_id, rep_rnr;
};

constexpr std::uint64_t kActiveGuid = 0x08c0eb0300dae2e6;
constexpr std::uint64_t kPassiveGuid = 0x08c0eb0300dae2ca;
constexpr Ipv4Addr kActiveIp{172, 17, 242, 47};
constexpr Ipv4Addr kPassiveIp{172, 17, 242, 56};

const std::vector<ExpectedConnection>& expected() {
  static const std::vector<ExpectedConnection> table{
      {"connectx_rdma_cm_write.pcap", 0x0000000b2975ef71, 0x71ef7529, 0xc25b8b76, 0x00000000010600ac, 0x137, 0x9f931b, 1, 1,
       0, 7, 0xc657, 0x167, 0xbee37a, 1, 1, 7},
      {"connectx_send_recv.pcap", 0x0000000b2975ef72, 0x72ef7529, 0xd05b8b76, 0x0000000001063039, 0x13a, 0xb2ef85, 0, 0, 0,
       0, 0xc42b, 0x16a, 0x424b71, 0, 0, 0},
      {"connectx_write_read.pcap", 0x0000000b2975ef73, 0x73ef7529, 0xd65b8b76, 0x0000000001063039, 0x139, 0xf045d0, 3, 3,
       3, 0, 0xc7fe, 0x169, 0x6af7e4, 3, 3, 0},
  };
  return table;
}

struct CapturedMad {
  Packet packet;
  std::vector<std::byte> mad;
};

std::vector<CapturedMad> qp1_mads(const std::filesystem::path& file) {
  const auto pcap = test::read_capture(file.string());
  EXPECT_TRUE(pcap.error.empty()) << pcap.error;
  std::vector<CapturedMad> out;
  for (const auto& rec : pcap.records) {
    Packet p;
    if (parse_frame(rec.data, ParseOptions{}, p) != ParseError::None) continue;
    if (p.dest_qp() != kGsiQpn) continue;
    EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
    EXPECT_EQ(check_gsi_packet(p), GsiError::None);
    out.push_back({p, std::vector<std::byte>(p.payload.begin(), p.payload.end())});
  }
  return out;
}

class CmCaptures : public ::testing::TestWithParam<ExpectedConnection> {
 protected:
  void SetUp() override {
    std::string why;
    const auto dir = test::find_captures_dir(why);
    if (!dir) GTEST_SKIP() << why;
    path_ = *dir / GetParam().file;
    if (!std::filesystem::exists(path_)) GTEST_SKIP() << path_ << " is not there";
  }
  std::filesystem::path path_;
};

TEST_P(CmCaptures, EveryMadDecodesToTheConnectionItCarries) {
  const ExpectedConnection& e = GetParam();
  const auto mads = qp1_mads(path_);
  ASSERT_EQ(mads.size(), 5u);
  const std::vector<CmAttribute> order{CmAttribute::Req, CmAttribute::Rep, CmAttribute::Rtu, CmAttribute::Dreq,
                                       CmAttribute::Drep};
  std::vector<ParsedMad> parsed(5);
  for (std::size_t i = 0; i < 5; ++i) {
    ASSERT_EQ(parse_mad(mads[i].mad, parsed[i]), MadError::None) << i;
    EXPECT_EQ(parsed[i].attribute, order[i]) << i;
    EXPECT_EQ(parsed[i].header.method(), MadMethod::Send);
    EXPECT_EQ(parsed[i].header.status.get(), 0);
    EXPECT_EQ(parsed[i].header.attribute_modifier.get(), 0u);
    // Linux forms one TID per comm ID: REP/RTU echo the REQ's, and the DREQ is the active
    // side's own TID again, echoed by the DREP (rdma-cm.md 2).
    EXPECT_EQ(parsed[i].header.tid(), e.tid) << i;
  }
  const CmReq req = parsed[0].as<CmReq>();
  EXPECT_EQ(req.local_comm_id.get(), e.active_comm_id);
  EXPECT_EQ(req.service_id.get(), e.service_id);
  EXPECT_EQ(req.local_ca_guid.get(), kActiveGuid);
  EXPECT_EQ(req.local_qkey.get(), 0u);
  EXPECT_EQ(req.local_qpn(), e.req_qpn);
  EXPECT_EQ(req.responder_resources(), e.req_rr);
  EXPECT_EQ(req.initiator_depth(), e.req_id);
  EXPECT_EQ(req.remote_cm_response_timeout(), 22);
  EXPECT_EQ(req.transport(), CmTransport::Rc);
  EXPECT_FALSE(req.end_to_end_flow_control());
  EXPECT_EQ(req.starting_psn(), e.req_psn);
  EXPECT_EQ(req.local_cm_response_timeout(), 22);
  EXPECT_EQ(req.retry_count(), e.req_retry);
  EXPECT_EQ(req.partition_key.get(), 0xFFFF);
  EXPECT_EQ(req.path_mtu(), 3);
  EXPECT_EQ(req.rnr_retry_count(), e.req_rnr);
  EXPECT_EQ(req.max_cm_retries(), 15);
  EXPECT_FALSE(req.srq());
  EXPECT_EQ(req.primary.local_lid.get(), 0xFFFF);
  EXPECT_EQ(req.primary.remote_lid.get(), 0xFFFF);
  EXPECT_EQ(req.primary.local_gid, gid_from_ipv4(kActiveIp));
  EXPECT_EQ(req.primary.remote_gid, gid_from_ipv4(kPassiveIp));
  EXPECT_EQ(req.primary.flow_label(), 0u);
  EXPECT_EQ(req.primary.packet_rate(), 7);
  EXPECT_EQ(req.primary.traffic_class, 0);
  EXPECT_EQ(req.primary.hop_limit, 64);
  EXPECT_EQ(req.primary.sl(), 0);
  EXPECT_FALSE(req.primary.subnet_local());
  EXPECT_EQ(req.primary.local_ack_timeout(), 19);
  EXPECT_FALSE(req.has_alternate_path());

  const auto svc = rdma_service_of(req.service_id.get());
  ASSERT_TRUE(svc);
  EXPECT_EQ(svc->port_space, RdmaPortSpace::Tcp);
  CmaAddressing cma;
  ASSERT_EQ(parse_cma_header(req.private_data, cma), CmaHeaderError::None);
  EXPECT_EQ(cma.src, IpAddress::of(kActiveIp));
  EXPECT_EQ(cma.dst, IpAddress::of(kPassiveIp));
  EXPECT_EQ(cma.src_port, e.cma_src_port);

  const CmRep rep = parsed[1].as<CmRep>();
  EXPECT_EQ(rep.local_comm_id.get(), e.passive_comm_id);
  EXPECT_EQ(rep.remote_comm_id.get(), e.active_comm_id);
  EXPECT_EQ(rep.local_qpn(), e.rep_qpn);
  EXPECT_EQ(rep.starting_psn(), e.rep_psn);
  EXPECT_EQ(rep.responder_resources, e.rep_rr);
  EXPECT_EQ(rep.initiator_depth, e.rep_id);
  EXPECT_EQ(rep.target_ack_delay(), 16);
  EXPECT_EQ(rep.failover_accepted(), 0);
  EXPECT_FALSE(rep.end_to_end_flow_control());
  EXPECT_EQ(rep.rnr_retry_count(), e.rep_rnr);
  EXPECT_FALSE(rep.srq());
  EXPECT_EQ(rep.local_ca_guid.get(), kPassiveGuid);

  const CmRtu rtu = parsed[2].as<CmRtu>();
  EXPECT_EQ(rtu.local_comm_id.get(), e.active_comm_id);
  EXPECT_EQ(rtu.remote_comm_id.get(), e.passive_comm_id);
  const CmDreq dreq = parsed[3].as<CmDreq>();
  EXPECT_EQ(dreq.local_comm_id.get(), e.active_comm_id);
  EXPECT_EQ(dreq.remote_comm_id.get(), e.passive_comm_id);
  EXPECT_EQ(dreq.remote_qpn(), e.rep_qpn);  // the receiver's own QPN
  const CmDrep drep = parsed[4].as<CmDrep>();
  EXPECT_EQ(drep.local_comm_id.get(), e.passive_comm_id);
  EXPECT_EQ(drep.remote_comm_id.get(), e.active_comm_id);

  // Both sides' QP1 frames: DETH source QP 1, P_Key 0xFFFF, IPv4 total length 308.
  for (const auto& m : mads) {
    EXPECT_EQ(m.packet.ext.deth.source_qp(), 1u);
    EXPECT_EQ(m.packet.bth.pkey.get(), 0xFFFF);
    EXPECT_EQ(m.packet.udp_length, 288);
  }
}

TEST_P(CmCaptures, RequestAndReplyBuiltFromTheirValuesAreTheCapturedBytes) {
  const ExpectedConnection& e = GetParam();
  const auto mads = qp1_mads(path_);
  ASSERT_EQ(mads.size(), 5u);

  CmReq req{};
  req.local_comm_id.set(e.active_comm_id);
  req.service_id.set(e.service_id);
  req.local_ca_guid.set(kActiveGuid);
  req.set_local_qpn(e.req_qpn);
  req.set_responder_resources(e.req_rr);
  req.set_initiator_depth(e.req_id);
  req.set_remote_cm_response_timeout(22);
  req.set_transport(CmTransport::Rc);
  req.set_starting_psn(e.req_psn);
  req.set_local_cm_response_timeout(22);
  req.set_retry_count(e.req_retry);
  req.partition_key.set(0xFFFF);
  req.set_path_mtu(3);
  req.set_rnr_retry_count(e.req_rnr);
  req.set_max_cm_retries(15);
  req.primary.local_lid.set(0xFFFF);
  req.primary.remote_lid.set(0xFFFF);
  req.primary.local_gid = gid_from_ipv4(kActiveIp);
  req.primary.remote_gid = gid_from_ipv4(kPassiveIp);
  req.primary.set_packet_rate(7);
  req.primary.hop_limit = 64;
  req.primary.set_local_ack_timeout(19);
  CmaAddressing cma{IpAddress::of(kActiveIp), IpAddress::of(kPassiveIp), e.cma_src_port};
  ASSERT_TRUE(write_cma_header(cma, req.private_data));
  const Mad built_req = make_mad(MadHeader::cm(CmAttribute::Req, e.tid), req);
  EXPECT_EQ(std::memcmp(built_req.data(), mads[0].mad.data(), kMadBytes), 0);

  CmRep rep{};
  rep.local_comm_id.set(e.passive_comm_id);
  rep.remote_comm_id.set(e.active_comm_id);
  rep.set_local_qpn(e.rep_qpn);
  rep.set_starting_psn(e.rep_psn);
  rep.responder_resources = e.rep_rr;
  rep.initiator_depth = e.rep_id;
  rep.set_target_ack_delay(16);
  rep.set_rnr_retry_count(e.rep_rnr);
  rep.local_ca_guid.set(kPassiveGuid);
  const Mad built_rep = make_mad(MadHeader::cm(CmAttribute::Rep, e.tid), rep);
  EXPECT_EQ(std::memcmp(built_rep.data(), mads[1].mad.data(), kMadBytes), 0);

  CmDreq dreq{};
  dreq.local_comm_id.set(e.active_comm_id);
  dreq.remote_comm_id.set(e.passive_comm_id);
  dreq.set_remote_qpn(e.rep_qpn);
  const Mad built_dreq = make_mad(MadHeader::cm(CmAttribute::Dreq, e.tid), dreq);
  EXPECT_EQ(std::memcmp(built_dreq.data(), mads[3].mad.data(), kMadBytes), 0);
}

INSTANTIATE_TEST_SUITE_P(ConnectX, CmCaptures, ::testing::ValuesIn(expected()),
                         [](const auto& info) {
                           std::string n = info.param.file;
                           return n.substr(0, n.find('.'));
                         });

}  // namespace
}  // namespace roce::proto::mad_captures_test
