// UDP source port as flow entropy for ECMP/RSS: constant per QP so packets of a QP stay in order.
#pragma once

#include <cstdint>

namespace roce::proto {

enum class SportScheme : std::uint8_t {
  RxeLegacy,  // Linux rxe up to ~5.16: 0xC000 + hash_32(local qpn, 14)
  FlowLabel,  // rdma_get_udp_sport (rxe >= 5.17, irdma, hns...): from the GRH flow label
};

// Linux's hash_32(): multiplicative hash keeping the top `bits` bits.
constexpr std::uint32_t linux_hash_32(std::uint32_t x, unsigned bits) { return (x * 0x61C88647u) >> (32 - bits); }

constexpr std::uint16_t rxe_legacy_sport(std::uint32_t local_qpn) {
  return static_cast<std::uint16_t>(0xC000 + (linux_hash_32(local_qpn, 14) & 0x3FFF));
}

// The flow label rdma_calc_flow_label() derives when none is configured; symmetric in the QPNs.
constexpr std::uint32_t flow_label_from_qpns(std::uint32_t lqpn, std::uint32_t rqpn) {
  std::uint64_t v = std::uint64_t{lqpn} * rqpn;
  v ^= v >> 20;
  v ^= v >> 40;
  return static_cast<std::uint32_t>(v & 0xFFFFF);
}

constexpr std::uint16_t sport_from_flow_label(std::uint32_t fl) {
  return static_cast<std::uint16_t>(0xC000 | ((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14)));
}

constexpr std::uint16_t udp_sport(SportScheme scheme, std::uint32_t lqpn, std::uint32_t rqpn, std::uint32_t flow_label = 0) {
  if (scheme == SportScheme::RxeLegacy) return rxe_legacy_sport(lqpn);
  return sport_from_flow_label(flow_label ? flow_label : flow_label_from_qpns(lqpn, rqpn));
}

// Values seen in real rxe captures (../shared/spec/rocev2-wire.md 1.1).
static_assert(rxe_legacy_sport(1) == 55410 && rxe_legacy_sport(17) == 57236 && rxe_legacy_sport(19) == 53368);
static_assert(rxe_legacy_sport(23) == 62017 && rxe_legacy_sport(0) == 49152);

}  // namespace roce::proto
