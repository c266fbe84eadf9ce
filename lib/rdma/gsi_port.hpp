// QP1, the general services QP of the port (IBA 13.5, A17 on RoCEv2): UD SEND_ONLY packets to
// dest QP 1 with Q_Key 0x80010000 carry one 256-byte MAD each. The engine steers such packets
// here before any QP lookup; the CM agent (lib/cm/cm_agent.hpp) takes the MADs out once per
// loop iteration and queues its answers, which the engine's transmit turn sends ahead of the
// data QPs. Both directions are fixed-size rings allocated once: a burst of MADs beyond them
// is counted and dropped (the CM retransmits), never grown.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/rdma/address.hpp"
#include "lib/rdma/qp_context.hpp"
#include "protocol/gsi.hpp"
#include "protocol/packet.hpp"

namespace roce::rdma {

// One MAD as QP1 received it: who sent it (IP, MAC, DETH source QP) and under which P_Key.
struct GsiReceived {
  proto::Mad mad{};
  IpAddress from{};
  proto::MacAddr from_mac{};
  std::uint32_t src_qp = proto::kGsiQpn;
  std::uint16_t pkey = proto::Bth::kDefaultPkey;
};

// One MAD to send: the destination's IP and MAC, the P_Key and the QP its agent listens on.
struct GsiSend {
  proto::Mad mad{};
  IpAddress to{};
  proto::MacAddr to_mac{};
  std::uint32_t dest_qp = proto::kGsiQpn;
  std::uint16_t pkey = proto::Bth::kDefaultPkey;
};

enum class GsiCounter : std::uint8_t {
  RxMads,        // MADs taken into the receive ring
  TxMads,        // MAD frames built
  RxRingFull,    // a MAD dropped: the agent had not emptied the ring
  TxRingFull,    // a MAD the agent queued found the ring full
  TxBuildFailed, // a frame that could not be built (frame buffer too small, bad address family)
  NotUdSend,     // GsiError reasons of refused packets, one counter each
  NotQp1,
  BadQkey,
  BadPkey,
  WrongLength,
  Count,
};
std::string to_string(GsiCounter c);

struct GsiConfig {
  std::uint16_t port_pkey = proto::Bth::kDefaultPkey;
  std::uint16_t udp_src_port = 0xC000;  // one fixed source port, as rxe sends its MADs
  std::uint32_t ring_size = 256;        // each direction
};

class GsiPort {
 public:
  explicit GsiPort(GsiConfig cfg = {});

  // Packet path (the engine): a packet for QP1 that passed the frame checks.
  void on_packet(const proto::Packet& p, proto::ByteSpan frame);
  // Builds the next queued MAD into `frame`; false when none is queued.
  bool build_next(TxFrame& frame, const LocalAddress& local, std::uint8_t ttl);
  bool has_tx_work() const { return tx_count_ > 0; }

  // The agent's side (same thread as the engine). Without an agent attached there is no QP1:
  // the engine drops its packets as for any unknown QP, and nothing waits in the ring for an
  // agent that comes later.
  void attach(bool on) { attached_ = on; }
  bool attached() const { return attached_; }
  bool pop(GsiReceived& out);
  bool push(const GsiSend& m);

  std::uint64_t counter(GsiCounter c) const { return counters_[static_cast<std::size_t>(c)]; }
  const GsiConfig& config() const { return cfg_; }

 private:
  void count(GsiCounter c) { ++counters_[static_cast<std::size_t>(c)]; }

  GsiConfig cfg_;
  std::vector<GsiReceived> rx_;
  std::size_t rx_head_ = 0, rx_count_ = 0;
  std::vector<GsiSend> tx_;
  std::size_t tx_head_ = 0, tx_count_ = 0;
  std::uint32_t psn_ = 0;  // QP1's own send PSN
  bool attached_ = false;
  std::array<std::uint64_t, static_cast<std::size_t>(GsiCounter::Count)> counters_{};
};

}  // namespace roce::rdma
