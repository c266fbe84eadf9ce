// perftest -R's control channel: the exchange that runs on TCP without -R runs on an rdma_cm RC
// connection of its own (perftest 4.5, establish_connection: rdma_client_connect /
// rdma_server_connect), every step one SEND each way (ctx_xchg_data_rdma, rdma_write_keys /
// rdma_read_keys): the client SENDs then receives, the server receives then SENDs. This channel
// is an OobChannel over such a QP, so that the same exchange code runs on it: each write is one
// SEND, reads take the received messages' bytes in order. Its only translation is the QP record:
// -R sends `struct pingpong_dest` (56 bytes, oob/cm_record.hpp) where TCP sends the 108-byte
// text record, so an incoming 56-byte message reads as the text record, and a text record written
// goes out as the 56-byte one. The QP (RC, receives posted before the REQ/REP leaves) is
// polled from the control thread through Dataplane::call; the CM side (connect/accept,
// disconnect) is the caller's, which tells the channel when the connection ended.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "client/buffers.hpp"
#include "client/connector.hpp"
#include "client/oob/channel.hpp"

namespace roce::client {

class CmChannel : public OobChannel {
 public:
  // Room per message: perftest's own receive is 56 bytes; a refusal line is longer.
  static constexpr std::uint32_t kSlotBytes = 1024;
  static constexpr std::uint32_t kReceives = 4;

  // A QP in INIT with its receives posted; `peer` names the other side in messages.
  static Result<std::unique_ptr<CmChannel>> create(Connector& conn, std::string peer_address, std::string peer_endpoint);
  ~CmChannel() override;
  CmChannel(const CmChannel&) = delete;
  CmChannel& operator=(const CmChannel&) = delete;

  const LocalQp& qp() const { return qp_; }
  // The QP parameters the channel was made with (the CM's RTR/RTS take MTU and depths from the REQ/REP).
  static QpParams qp_params();
  // The CM connection is over (DREQ, DREP, REJ, ...): once what came is read, reads fail with ECONNRESET.
  void set_disconnected() { disconnected_.store(true); }
  bool disconnected() const { return disconnected_.load(); }
  // Called while a read or write waits (a client takes its CM events there, and calls
  // set_disconnected when its control connection ends).
  void set_on_wait(std::function<void()> f) { on_wait_ = std::move(f); }
  std::uint64_t messages_received() const { return received_; }
  std::uint64_t messages_sent() const { return sent_; }

  Status read_exact(std::span<std::byte> out, int timeout_ms) override;
  Status write_all(std::span<const std::byte> data) override;
  bool wait_readable(int timeout_ms) const override;
  std::string peer_address() const override { return peer_address_; }
  std::string peer_endpoint() const override { return peer_endpoint_; }

 private:
  CmChannel(Connector& conn, std::string peer_address, std::string peer_endpoint)
      : conn_(conn), peer_address_(std::move(peer_address)), peer_endpoint_(std::move(peer_endpoint)) {}
  // Takes what completed into inbox_ (receives re-posted); a failed completion is the error.
  Status poll() const;

  Connector& conn_;
  std::string peer_address_, peer_endpoint_;
  LocalQp qp_;
  MappedBuffer buffer_;  // kReceives receive slots, then one send slot
  const rdma::MemoryRegion* mr_ = nullptr;
  std::atomic<bool> disconnected_{false};
  std::function<void()> on_wait_;
  // Mutable: wait_readable() polls the CQ too.
  mutable std::deque<std::byte> inbox_;
  mutable Status failure_;
  mutable std::uint64_t received_ = 0;
  mutable std::uint64_t sends_completed_ = 0;
  std::uint64_t sent_ = 0;
};

}  // namespace roce::client
