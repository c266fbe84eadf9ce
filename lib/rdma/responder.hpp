// Responder: checks each request's PSN (expected / duplicate / ahead), executes SEND, WRITE,
// READ and atomics against posted receives and registered memory, and queues the ACKs, NAKs,
// READ responses and atomic ACKs it owes, in PSN order. Duplicates are answered from saved
// responder resources: READs re-executed, atomics replayed, never re-executed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/rdma/qp_context.hpp"
#include "protocol/aeth.hpp"
#include "protocol/packet.hpp"

namespace roce {

enum class RequestPsnClass : std::uint8_t { Expected, Duplicate, Ahead };
RequestPsnClass classify_request_psn(std::uint32_t psn, std::uint32_t expected);

enum class ResponderOutcome : std::uint8_t {
  Nothing,   // dropped or answered without changing state
  Progress,  // executed; the receive CQ or the output queue changed
  Fatal,     // a class C error: the NAK is queued and the QP must enter ERR
};

class Responder {
 public:
  enum class SequenceState : std::uint8_t {
    Normal,   // the next request is taken as it comes
    NakSent,  // a NAK sequence error or RNR NAK went out: later PSNs are dropped silently
  };
  enum class Message : std::uint8_t { None, Send, Write };

  void start(const QpContext& qp);  // entering RTR

  ResponderOutcome on_request(QpContext& qp, const proto::Packet& pkt, proto::ByteSpan frame, Nanos now);

  bool has_output() const { return out_count_ > 0; }
  // The next packet out carries data (a READ response): the pacer governs it.
  bool next_is_data() const { return out_count_ > 0 && out_[out_head_].kind == Item::Kind::ReadResponse; }
  // Writes the next queued response packet.
  bool build_next(QpContext& qp, TxFrame& frame);
  void clear_output() {
    out_count_ = 0;
    replays_queued_ = false;
  }
  // A READ response found its region gone and went out as a NAK: the QP must enter ERR.
  bool take_fatal() {
    const bool f = fatal_;
    fatal_ = false;
    return f;
  }

  // Where the payload of a continuing SEND or WRITE goes when the packet is the one expected
  // next and execute() would place it: the engine copies it there while it settles the
  // packet's deferred ICRC. No dst otherwise (the packet then takes the usual way). Reads
  // state only: a packet that fails its ICRC leaves nothing changed but those bytes, inside the
  // open message, where the resent packet will put its own.
  PayloadTarget continuation_target(const QpContext& qp, const proto::Packet& pkt) const;

  std::uint32_t expected_psn() const { return epsn_; }
  std::uint32_t msn() const { return msn_; }
  SequenceState sequence_state() const { return seq_; }

 private:
  struct Resource {
    enum class Kind : std::uint8_t { Free, Read, Atomic } kind = Kind::Free;
    std::uint32_t first_psn = 0;
    std::uint32_t npackets = 0;
    std::uint64_t va = 0;
    std::uint32_t rkey = 0;
    std::uint32_t length = 0;
    std::uint64_t original = 0;
  };
  struct Item {
    enum class Kind : std::uint8_t { Ack, Nak, ReadResponse, AtomicAck } kind = Kind::Ack;
    std::uint32_t psn = 0;  // ACK/NAK/atomic: the PSN; READ: PSN of the first response packet
    std::uint32_t msn = 0;
    proto::Syndrome syndrome{};
    std::uint64_t va = 0;            // READ: where the data starts; the R_Key is checked again
    std::uint32_t rkey = 0;          // for every response packet (the region may be gone by then)
    std::uint32_t length = 0;
    std::uint32_t npackets = 0;
    std::uint32_t sent = 0;
    std::uint64_t original = 0;
    // Queued or restarted for a duplicate request (a retry): dropped when its resource is
    // recycled by a new READ/atomic (see make_room_for_rd_atomic).
    bool reexecuted = false;
    bool replay = false;  // a fresh answer to a duplicate: takes no responder resource
  };

  ResponderOutcome on_rc_request(QpContext& qp, const proto::Packet& pkt);
  ResponderOutcome on_uc_request(QpContext& qp, const proto::Packet& pkt);
  ResponderOutcome on_ud_request(QpContext& qp, const proto::Packet& pkt, proto::ByteSpan frame);
  ResponderOutcome on_duplicate(QpContext& qp, const proto::Packet& pkt);
  ResponderOutcome execute(QpContext& qp, const proto::Packet& pkt);
  ResponderOutcome do_send(QpContext& qp, const proto::Packet& pkt);
  ResponderOutcome do_write(QpContext& qp, const proto::Packet& pkt);
  ResponderOutcome do_read(QpContext& qp, const proto::Packet& pkt);
  ResponderOutcome do_atomic(QpContext& qp, const proto::Packet& pkt);
  ResponderOutcome class_c_error(QpContext& qp, std::uint32_t psn, proto::NakCode code);
  void complete_receive(QpContext& qp, ibv_wc_status status, ibv_wc_opcode opcode, std::uint32_t byte_len,
                        unsigned flags, std::uint32_t imm_or_rkey, std::uint32_t src_qp);
  void end_of_request(QpContext& qp, const proto::Packet& pkt);

  bool output_full() const { return out_count_ >= out_capacity_; }
  static bool fits_pmtu(const QpContext& qp, const proto::Packet& pkt);  // the payload rule of the opcode
  bool fits_open_write(const proto::Packet& pkt) const;  // within the open WRITE, and all of its rest at LAST
  Item& push_item();
  void queue_ack(QpContext& qp, std::uint32_t psn);
  void queue_nak(QpContext& qp, std::uint32_t psn, proto::Syndrome s);
  Resource& next_resource();
  // READ/atomic answers queued for new requests (replays for duplicates do not count: the
  // requester already counted that request once).
  std::uint32_t pending_rd_atomic() const;
  // Room for one more READ/atomic answer: true if there is, possibly after dropping retry
  // answers that belong to the resource the new request recycles (see the definition).
  bool make_room_for_rd_atomic();
  // Drops queued answers for PSNs at or after `psn`; returns the READ response stream of the
  // request that started at `read_first_psn` if it is among them (kept, for a restart).
  Item* truncate_output_at(std::uint32_t psn, std::uint32_t read_first_psn);

  std::uint32_t epsn_ = 0;
  std::uint32_t msn_ = 0;
  SequenceState seq_ = SequenceState::Normal;
  Message msg_ = Message::None;
  std::uint32_t msg_offset_ = 0;     // SEND: bytes placed in the receive WQE so far
  // WRITE: where the next payload byte goes. Every packet's range is checked against the R_Key
  // again, so a region deregistered or invalidated in the middle of a message is never written.
  std::uint64_t write_va_ = 0;
  std::uint32_t write_rkey_ = 0;
  std::uint32_t write_remaining_ = 0;
  std::uint32_t write_length_ = 0;
  bool uc_dropping_ = false;
  bool fatal_ = false;         // UC: the current message lost a packet; skip to the next FIRST/ONLY

  std::vector<Resource> resources_;
  std::size_t next_resource_ = 0;
  std::vector<Item> out_;
  std::size_t out_head_ = 0;
  std::size_t out_count_ = 0;
  std::size_t out_capacity_ = 0;
  bool replays_queued_ = false;  // some queued item was re-executed for a duplicate (until the queue empties)
  std::size_t slot(std::size_t i) const { return (out_head_ + i) & (out_.size() - 1); }
};

std::string to_string(RequestPsnClass c);
std::string to_string(ResponderOutcome o);
std::string to_string(Responder::SequenceState s);

}  // namespace roce
