// Hand-built RC WRITE request frames (the packets a peer would send), and a raw net_ring port
// pair with its own pool to feed them into a port or forward them: the material of the
// baselines, which must see the same frames over the same PMD as the transport.
#pragma once

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "dataplane/ring_port.hpp"
#include "protocol/builder.hpp"

namespace roce::bench {

inline constexpr proto::MacAddr kPeerMac{0x02, 0, 0, 0, 0x0B, 0x02};
inline constexpr proto::Ipv4Addr kPeerIp{10, 0, 11, 2};
inline constexpr proto::MacAddr kDutMac{0x02, 0, 0, 0, 0x0B, 0x01};
inline constexpr proto::Ipv4Addr kDutIp{10, 0, 11, 1};
inline constexpr std::uint32_t kPeerQpn = 0x4242;

// WRITEs of `message` bytes in packets of `payload` bytes to `target` (slots of `message`
// bytes, wrapping), PSNs counting from 0.
class WriteFrames {
 public:
  WriteFrames(std::uint32_t payload, std::uint32_t message, std::uint32_t pmtu, std::uint32_t dest_qpn, std::uint32_t rkey,
              std::byte* target, std::size_t target_len);
  // Packet `k` of the run into `out`; returns its length (0 if it does not fit).
  std::size_t build(std::uint64_t k, std::span<std::byte> out);
  // Whether the last packet of each message asks for an ACK (the default, as a peer signalling
  // every WRITE); false: none does, so the responder sends no ACK at all.
  void set_ack_requests(bool on) { ack_requests_ = on; }

 private:
  std::uint32_t payload_len_, message_;
  std::byte* target_;
  std::size_t slots_;
  std::uint32_t rkey_;
  bool ack_requests_ = true;
  proto::FrameSpec spec_;
  std::vector<std::byte> payload_;
};

// A net_ring pair with a pool; port a (and b when asked) opened.
struct Feeder {
  dp::RingPair ports;
  rte_mempool* pool = nullptr;
  bool a_open = false, b_open = false;
  ~Feeder();
};
bool make_feeder(Feeder& f, const std::string& tag, bool open_both, unsigned mbufs);

// Transmits frames [first, first + n) on `port` (all of them: retries while the ring is full).
bool preload(std::uint16_t port, rte_mempool* pool, WriteFrames& frames, std::uint64_t first, unsigned n);
void drain(std::uint16_t port);

}  // namespace roce::bench
