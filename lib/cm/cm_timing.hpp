// CM time values. IBA gives timeouts as 4.096 us * 2^x; Linux turns them into milliseconds as
// 2^(x-8) (cm_convert_to_ms), and the rdma_cm peers we interoperate with time out on that
// scale, so this CM does the same.
#pragma once

#include <algorithm>
#include <cstdint>

#include "lib/time.hpp"

namespace roce::cm {

// The IBA time exponent as Linux's CM waits it out.
constexpr Nanos cm_time(std::uint8_t iba_exponent) {
  const int shift = std::max(static_cast<int>(iba_exponent) - 8, 0);
  return (Nanos{1} << shift) * kMilli;
}

// Local ACK timeout of a path (cm_ack_timeout): 4.096us*2^t >= 4.096us*2^ack_delay +
// 2*4.096us*2^life_time, kept small: the larger of ack_delay and life_time+1, plus one when
// the other is within half of it.
constexpr std::uint8_t cm_ack_timeout(std::uint8_t ca_ack_delay, std::uint8_t packet_life_time) {
  int t = packet_life_time + 1;
  if (t >= ca_ack_delay) t += (ca_ack_delay >= t - 1) ? 1 : 0;
  else t = ca_ack_delay + ((t >= ca_ack_delay - 1) ? 1 : 0);
  return static_cast<std::uint8_t>(std::min(t, 31));
}

static_assert(cm_time(20) == 4096 * kMilli);
static_assert(cm_time(18) == 1024 * kMilli);
static_assert(cm_time(3) == 1 * kMilli);
// rdma_cm's REQ timer: 2 * packet lifetime 18 + remote response timeout 20 = 6144 ms.
static_assert(2 * cm_time(18) + cm_time(20) == 6144 * kMilli);
// The REQs in the captures carry local ACK timeout 19 for packet lifetime 18 (ack delay 15/16).
static_assert(cm_ack_timeout(15, 18) == 19 && cm_ack_timeout(16, 18) == 19);
static_assert(cm_ack_timeout(20, 18) == 21);

}  // namespace roce::cm
