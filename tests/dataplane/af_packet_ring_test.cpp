// The ring our tools give a net_af_packet vdev that sets none of its own (dataplane/eal.hpp).
#include <gtest/gtest.h>

#include "dataplane/eal.hpp"

namespace roce::test::af_packet_ring_test {
namespace {

using dp::with_default_af_packet_ring;

TEST(AfPacketRing, AVdevWithoutRingDevargsGetsOurs) {
  const std::string ring = ",blocksz=36864,framesz=4608,framecnt=" + std::to_string(dp::kAfPacketRingFrames);
  EXPECT_EQ(with_default_af_packet_ring("net_af_packet0,iface=veth0"), "net_af_packet0,iface=veth0" + ring);
  EXPECT_EQ(with_default_af_packet_ring("net_af_packet1,iface=e1,qpairs=2"), "net_af_packet1,iface=e1,qpairs=2" + ring);
}

TEST(AfPacketRing, ARingTheUserSetAndOtherVdevsAreLeftAlone) {
  for (const std::string v : {"net_af_packet0,iface=v0,framecnt=512", "net_af_packet0,iface=v0,blocksz=8192",
                              "net_af_packet0,framesz=2048,iface=v0", "net_tap0,iface=rdp0", "net_ring0",
                              "net_pcap0,rx_pcap=framecnt.pcap"})
    EXPECT_EQ(with_default_af_packet_ring(v), v);
  // A key that only ends like a ring devarg is not one.
  EXPECT_NE(with_default_af_packet_ring("net_af_packet0,iface=myframecnt=1"), "net_af_packet0,iface=myframecnt=1");
}

}  // namespace
}  // namespace roce::test::af_packet_ring_test
