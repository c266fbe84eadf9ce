// The pacer driven by the reaction point: a CNP must space the departures that follow it at
// the new Rc, and the recovery timers must widen them again.
#include <gtest/gtest.h>

#include <vector>

#include "lib/cc/pacer.hpp"
#include "lib/cc/reaction_point.hpp"

namespace roce::cc::pacer_rp_test {
namespace {

constexpr std::uint32_t kPacket = 1000;

struct PacedQp {
  ReactionPoint rp;
  Pacer pacer;
  explicit PacedQp(const RpParams& p) : rp(p), pacer(p.line_rate_bps, 1) {}

  void sync(Nanos now) {
    if (pacer.rate_bps() != rp.rc_bps()) pacer.set_rate(now, rp.rc_bps());
  }
  // Sends one packet as early as the pacer allows, running RP timers that fall before it.
  Nanos send_next(Nanos now) {
    for (;;) {
      const Nanos t = std::max(now, pacer.earliest_departure(kPacket));
      if (rp.next_deadline() > t) {
        pacer.on_sent(t, kPacket);
        rp.on_bytes_sent(t, kPacket);
        sync(t);
        return t;
      }
      now = rp.next_deadline();
      rp.advance(now);
      sync(now);
    }
  }
};

TEST(PacerWithReactionPoint, CnpSpacesDeparturesAtTheNewRc) {
  RpParams p = paper_params(100e9);
  PacedQp qp(p);
  std::vector<Nanos> t;
  Nanos now = 0;
  for (int i = 0; i < 10; ++i) t.push_back(now = qp.send_next(now));
  for (int i = 1; i < 10; ++i) ASSERT_EQ(t[i] - t[i - 1], 80) << "1000 B at 100 Gb/s";
  qp.rp.on_cnp(now);
  qp.sync(now);
  ASSERT_EQ(qp.rp.rc_bps(), 50e9);
  const Nanos cnp_at = now;
  std::vector<Nanos> after;
  while (now < cnp_at + from_us(55) - 200) after.push_back(now = qp.send_next(now));
  for (std::size_t i = 1; i < after.size(); ++i) ASSERT_EQ(after[i] - after[i - 1], 160) << "packet " << i;
  EXPECT_EQ(after.front() - cnp_at, 160) << "the packet right after the CNP already waits at 50 Gb/s";
  // Fast recovery at cnp + 55 us raises Rc to 75 Gb/s: 1000 B take 106.67 ns on average.
  while (now < cnp_at + from_us(56)) now = qp.send_next(now);
  ASSERT_EQ(qp.rp.rc_bps(), 75e9);
  const Nanos from = now;
  for (int i = 0; i < 400; ++i) now = qp.send_next(now);
  EXPECT_NEAR(static_cast<double>(now - from) / 400, 1000 * 8 / 75.0, 0.01);
}

}  // namespace
}  // namespace roce::cc::pacer_rp_test
