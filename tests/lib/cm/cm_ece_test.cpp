// Selective repeat is agreed in the REQ/REP's ECE (lib/cm/ece.hpp) and only between two sides
// that both asked for it: the bytes where Linux puts ECE, what each side is told, and the QP
// attributes both sides then use. A REQ without our ECE (rxe, an RNIC) gives go-back-N.
#include <gtest/gtest.h>

#include "lib/cm/ece.hpp"
#include "protocol/cma_header.hpp"
#include "tests/lib/cm/cm_pair.hpp"

namespace roce::cm::test::cm_ece_test {
namespace {

using proto::CmAttribute;

constexpr std::uint64_t kService = proto::rdma_service_id(proto::RdmaPortSpace::Tcp, 7175);

TEST(Ece, AgreesOnlyWhenBothSidesAreOursAndWantIt) {
  const Ece offer = selective_repeat_ece(64);
  EXPECT_EQ(offer.vendor_id, kRocev2DpVendorId);
  EXPECT_EQ(selective_repeat_window(offer), 64u);
  EXPECT_EQ(agreed_selective_repeat(offer, answer_selective_repeat(offer, 128)), 64u);
  EXPECT_EQ(agreed_selective_repeat(offer, answer_selective_repeat(offer, 32)), 32u);
  EXPECT_EQ(answer_selective_repeat(offer, 0), Ece{}) << "a passive side that does not do it answers without ECE";
  EXPECT_EQ(answer_selective_repeat(Ece{}, 64), Ece{}) << "no offer, no answer";
  // Another vendor's ECE with the same bits (mlx5: PCI vendor 0x15b3, bit 0 = its selective repeat).
  const Ece mlx5{0x15b3, 0x20000001};
  EXPECT_EQ(selective_repeat_window(mlx5), 0u);
  EXPECT_EQ(answer_selective_repeat(mlx5, 64), Ece{});
  EXPECT_EQ(agreed_selective_repeat(offer, mlx5), 0u);
  EXPECT_EQ(agreed_selective_repeat(offer, Ece{}), 0u) << "rxe and a peer without ECE answer zero";
}

class CmEce : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(p.b.cm.listen(kService).ok()); }
  // REQ with `offer`, REP with the passive side's answer for `passive_window`; returns the
  // window each side then agrees (what active_qp_attrs / passive_qp_attrs put in CmQpAttrs).
  std::pair<std::uint32_t, std::uint32_t> connect(const Ece& offer, std::uint32_t passive_window) {
    ConnectParams cp = connect_params(p.a, p.b, kService);
    cp.ece = offer;
    auto r = p.call(p.a, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.connect(cp, now, out); });
    EXPECT_TRUE(r.ok());
    p.run_for(1 * kMilli);
    const CmEvent* ev = p.b.last(CmEventType::ReqReceived);
    EXPECT_NE(ev, nullptr);
    if (ev == nullptr) return {};
    const ReqInfo req = std::get<ReqInfo>(ev->detail);
    EXPECT_EQ(req.ece, offer);
    AcceptParams ap = accept_params(0x22);
    ap.ece = answer_selective_repeat(req.ece, passive_window);
    const CmId b_id = ev->id;
    EXPECT_TRUE(p.call(p.b, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.accept(b_id, ap, now, out); }).ok());
    p.run_for(1 * kMilli);
    const CmEvent* rep = p.a.last(CmEventType::RepReceived);
    EXPECT_NE(rep, nullptr);
    if (rep == nullptr) return {};
    const RepInfo ri = std::get<RepInfo>(rep->detail);
    EXPECT_EQ(ri.ece, ap.ece);
    return {agreed_selective_repeat(cp.ece, ri.ece), agreed_selective_repeat(req.ece, ap.ece)};
  }
  CmPair p;
};

TEST_F(CmEce, BothOursAgreeOnTheSmallerWindowAndTheBytesSitWhereLinuxPutsThem) {
  const auto [active, passive] = connect(selective_repeat_ece(128), 64);
  EXPECT_EQ(active, 64u);
  EXPECT_EQ(passive, 64u);
  const Mad& req = p.records(true, CmAttribute::Req)[0]->mad;
  const Mad& rep = p.records(false, CmAttribute::Rep)[0]->mad;
  const std::size_t h = proto::kMadHeaderBytes;
  // Attribute modifier (MAD header bytes 20..23): the options word.
  EXPECT_EQ(std::to_integer<unsigned>(req[23]), 1u);
  EXPECT_EQ(std::to_integer<unsigned>(req[22]), 128u / 8);
  EXPECT_EQ(std::to_integer<unsigned>(rep[22]), 64u / 8);
  // Vendor ID: REQ bytes 5..7; REP bytes 15, 19, 23 (high, middle, low).
  EXPECT_EQ(std::to_integer<unsigned>(req[h + 5]), 0x52u);
  EXPECT_EQ(std::to_integer<unsigned>(req[h + 6]), 0x44u);
  EXPECT_EQ(std::to_integer<unsigned>(req[h + 7]), 0x50u);
  EXPECT_EQ(std::to_integer<unsigned>(rep[h + 15]), 0x52u);
  EXPECT_EQ(std::to_integer<unsigned>(rep[h + 19]), 0x44u);
  EXPECT_EQ(std::to_integer<unsigned>(rep[h + 23]), 0x50u);
}

TEST_F(CmEce, APassiveSideThatDoesNotDoItGivesGoBackNAndAnEceFreeRep) {
  const auto [active, passive] = connect(selective_repeat_ece(64), 0);
  EXPECT_EQ(active, 0u);
  EXPECT_EQ(passive, 0u);
  const Mad& rep = p.records(false, CmAttribute::Rep)[0]->mad;
  const std::size_t h = proto::kMadHeaderBytes;
  for (std::size_t i : {std::size_t{20}, std::size_t{21}, std::size_t{22}, std::size_t{23}, h + 15, h + 19, h + 23})
    EXPECT_EQ(std::to_integer<unsigned>(rep[i]), 0u) << i;
}

TEST_F(CmEce, ARequestWithoutOurEceGivesGoBackN) {
  const auto [active, passive] = connect(Ece{}, 64);
  EXPECT_EQ(active, 0u);
  EXPECT_EQ(passive, 0u);
  const Mad& req = p.records(true, CmAttribute::Req)[0]->mad;
  for (std::size_t i : {std::size_t{20}, std::size_t{21}, std::size_t{22}, std::size_t{23}, proto::kMadHeaderBytes + 5,
                        proto::kMadHeaderBytes + 6, proto::kMadHeaderBytes + 7})
    EXPECT_EQ(std::to_integer<unsigned>(req[i]), 0u) << "a REQ that offers nothing is the one we sent before: " << i;
}

}  // namespace
}  // namespace roce::cm::test::cm_ece_test
