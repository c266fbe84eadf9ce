// The InfiniBand Communication Manager (IBA vol. 1 chapter 12) of one port, in the role
// Linux's drivers/infiniband/core/cm.c plays: REQ/MRA/REJ/REP/RTU/DREQ/DREP on the passive and
// the active side, SIDR_REQ/SIDR_REP for UD, MAD retransmission on the CM response timeouts,
// duplicate and stale request handling, TIMEWAIT, and ClassPortInfo.
//
// Pure C++ on an injected clock: every entry point takes `now` and appends the MADs to send
// and the consumer's events to a CmOutput. The engine's QP1 endpoint calls on_mad() for each
// MAD it receives and on_timer() when next_deadline() passes, and sends what comes out;
// consumers (rdma_cm.hpp, the appliance, roce-gen) call listen/connect/accept/... . State is
// bounded: CmConfig caps the IDs, half-open IDs and per-source half-open IDs, and every ID that
// waits on the network or on the consumer has a timer that frees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lib/cm/cm_counters.hpp"
#include "lib/cm/cm_decisions.hpp"
#include "lib/cm/cm_types.hpp"
#include "lib/status.hpp"
#include "protocol/be.hpp"
#include "protocol/mad_parser.hpp"

namespace roce::cm {

class CommunicationManager {
 public:
  explicit CommunicationManager(const CmConfig& config);

  // --- MADs and time (the QP1 endpoint) ---
  // One received MAD (the 256-byte payload of a GSI packet) from `from`.
  void on_mad(proto::ByteSpan mad, const MadPeer& from, Nanos now, CmOutput& out);
  // Runs every timer due at `now`.
  void on_timer(Nanos now, CmOutput& out);
  // The earliest timer, kNever when none is armed.
  Nanos next_deadline() const;

  // --- Consumer calls ---
  // REQs and SIDR_REQs whose Service ID & mask == service_id & mask are delivered.
  Status listen(std::uint64_t service_id, std::uint64_t mask = ~std::uint64_t{0});
  Status stop_listening(std::uint64_t service_id);

  Result<CmId> connect(const ConnectParams& p, Nanos now, CmOutput& out);
  // Active side, after RepReceived and moving the QP to RTS: RTU, ESTABLISHED.
  Status ready_to_use(CmId id, Nanos now, CmOutput& out, std::span<const std::uint8_t> private_data = {});
  // Passive side, after ReqReceived and moving the QP to RTR: REP, REP_SENT.
  Status accept(CmId id, const AcceptParams& p, Nanos now, CmOutput& out);
  // REJ with `reason` (a consumer turning a request down: RejReason::ConsumerDefined).
  Status reject(CmId id, proto::RejReason reason, Nanos now, CmOutput& out, std::span<const std::uint8_t> private_data = {},
                std::span<const std::uint8_t> ari = {});
  // MRA: the consumer needs up to 4.096 us * 2^service_timeout more for a REQ or REP.
  Status delay(CmId id, std::uint8_t service_timeout, Nanos now, CmOutput& out);
  // The QP of a REP_SENT ID received its first packet before the RTU (IB_EVENT_COMM_EST).
  Status notify_established(CmId id, Nanos now, CmOutput& out);
  // Passive IDs in REP_SENT or MRA_REP_RCVD: the RTU is awaited, and the first packet on the
  // ID's QP (local_qpn_of) stands for it (IBA 12.9.5: "a QP in RTR receiving a packet"). The
  // owner of the QPs watches them and calls notify_established.
  const std::set<CmId>& awaiting_rtu() const { return awaiting_rtu_; }
  std::optional<std::uint32_t> local_qpn_of(CmId id) const;
  // DREQ for an established ID.
  Status disconnect(CmId id, Nanos now, CmOutput& out, std::span<const std::uint8_t> private_data = {});
  // DREP for a DREQ_RCVD ID (only needed with CmConfig::auto_drep off).
  Status disconnect_reply(CmId id, Nanos now, CmOutput& out, std::span<const std::uint8_t> private_data = {});
  // The consumer is done with the ID (ib_destroy_cm_id): REJ, DREQ or DREP as its state asks;
  // no more events for it; the CM frees it now or when its TIMEWAIT ends.
  void destroy(CmId id, Nanos now, CmOutput& out);
  // DREQ for every established ID and REJ for every pending one: the port is going away.
  void disconnect_all(Nanos now, CmOutput& out);

  Result<CmId> sidr_request(const SidrRequestParams& p, Nanos now, CmOutput& out);
  Status sidr_reply(CmId id, const SidrReplyParams& p, Nanos now, CmOutput& out);

  // --- Inspection ---
  std::optional<CmState> state_of(CmId id) const;
  std::size_t id_count() const { return conns_.size(); }
  // IDs in one state (a stopping consumer waits for its DREQs to be answered).
  std::size_t count_in(CmState s) const;
  std::size_t half_open_count() const { return half_open_; }
  std::size_t listener_count() const { return listeners_.size(); }
  std::size_t sidr_reply_cache_size() const { return sidr_replies_.size(); }
  const CmCounters& counters() const { return counters_; }
  const CmConfig& config() const { return config_; }

 private:
  struct Connection {
    CmId local_id = 0;
    std::uint32_t remote_id = 0;
    CmState state = CmState::Idle;
    bool active = false;
    bool consumer_gone = false;
    std::uint64_t tid = 0;
    std::uint64_t service_id = 0;
    MadPeer peer{};
    std::uint64_t remote_ca_guid = 0;
    std::uint32_t local_qpn = 0;
    std::uint32_t remote_qpn = 0;
    Nanos timeout = 0;            // retransmission interval of `pending`
    std::uint8_t max_cm_retries = 0;
    std::uint8_t retries_left = 0;
    std::uint8_t av_timeout = 0;  // path local ACK timeout: MRA extension and TIMEWAIT length
    std::uint8_t service_timeout = 0;
    Nanos deadline = kNever;
    std::optional<Mad> pending;   // the REQ, REP, DREQ or SIDR_REQ the timer retransmits
    std::optional<Mad> last_mra;  // regenerated answers to duplicates
    std::optional<Mad> last_rtu;
    std::optional<Mad> last_drep;
    std::optional<Mad> last_rep;
    bool in_remote_id_index = false;
    bool in_remote_qpn_index = false;
  };

  using RemoteKey = std::pair<std::uint32_t, std::uint64_t>;  // (comm ID or QPN, CA GUID)
  using SidrKey = std::pair<std::uint32_t, Gid>;               // (request ID, source GID)

  // The one place a connection changes state: checks the move, keeps the half-open count,
  // the per-peer counts and the QPN index in step.
  void set_state(Connection& c, CmState to);
  void arm(Connection& c, Nanos deadline);
  void free_id(CmId id);
  Connection* find(CmId local_id);
  Connection* find(CmId local_id, std::uint32_t remote_id);
  Connection* find_remote(const RemoteKey& k);
  void index_remote_id(Connection& c);
  void index_remote_qpn(Connection& c);
  bool room_for_half_open(const Gid& peer) const;
  CmId allocate_id();
  std::uint64_t next_tid(CmId id) const;

  void send(CmOutput& out, const MadPeer& to, const Mad& mad);
  void retransmit(Connection& c, CmOutput& out);
  void start_pending(Connection& c, const Mad& mad, Nanos now, CmOutput& out);
  void emit(Connection& c, CmOutput& out, CmEvent ev);
  void send_rej(Connection& c, proto::RejReason reason, std::span<const std::uint8_t> ari,
                std::span<const std::uint8_t> private_data, CmOutput& out);
  void issue_rej(const proto::ParsedMad& p, std::uint32_t local_id, std::uint32_t remote_id, proto::CmMessage message,
                 proto::RejReason reason, const MadPeer& to, CmOutput& out);
  void enter_timewait(Connection& c, Nanos now);
  void send_drep(Connection& c, std::span<const std::uint8_t> private_data, Nanos now, CmOutput& out);

  // `mad`: the whole MAD, kept when the request is held for a listener.
  void on_req(const proto::ParsedMad& p, proto::ByteSpan mad, const MadPeer& from, Nanos now, CmOutput& out);
  void on_rep(const proto::ParsedMad& p, const MadPeer& from, Nanos now, CmOutput& out);
  void on_rtu(const proto::ParsedMad& p, Nanos now, CmOutput& out);
  void on_rej(const proto::ParsedMad& p, Nanos now, CmOutput& out);
  void on_mra(const proto::ParsedMad& p, Nanos now, CmOutput& out);
  void on_dreq(const proto::ParsedMad& p, const MadPeer& from, Nanos now, CmOutput& out);
  void on_drep(const proto::ParsedMad& p, Nanos now, CmOutput& out);
  void on_sidr_req(const proto::ParsedMad& p, proto::ByteSpan mad, const MadPeer& from, Nanos now, CmOutput& out);
  void on_sidr_rep(const proto::ParsedMad& p, Nanos now, CmOutput& out);
  void on_class_port_info(const proto::ParsedMad& p, const MadPeer& from, CmOutput& out);
  void answer_with_status(const proto::ParsedMad& p, proto::MadStatus status, const MadPeer& from, CmOutput& out);
  void on_expired(Connection& c, Nanos now, CmOutput& out);
  void expire_sidr_replies(Nanos now);

  const std::uint64_t* listener_for(std::uint64_t service_id) const;
  // CmConfig::unmatched_request_hold: keeps a request for `service_id` that no listener takes
  // (true), or says it must be refused now (false: no hold, the hold is full, or it is being
  // replayed after its hold).
  bool hold_unmatched(proto::ByteSpan mad, const MadPeer& from, std::uint64_t service_id, Nanos now);
  // Replays the held requests a listener now takes, and those whose hold ended (refused then).
  void replay_held(Nanos now, CmOutput& out);

  CmConfig config_;
  CmCounters counters_;
  std::unordered_map<CmId, Connection> conns_;
  std::map<RemoteKey, CmId> by_remote_id_;
  std::map<RemoteKey, CmId> by_remote_qpn_;
  std::set<std::pair<Nanos, CmId>> timers_;
  std::map<std::uint64_t, std::uint64_t> listeners_;  // service ID -> mask
  std::map<Gid, std::size_t> half_open_by_peer_;
  std::set<CmId> awaiting_rtu_;
  std::size_t half_open_ = 0;
  std::uint32_t id_counter_ = 0;
  std::uint32_t id_operand_ = 0;
  // Passive SIDR: requests waiting for the consumer, and the replies already sent.
  std::map<SidrKey, CmId> sidr_pending_;
  struct SidrReply {
    Mad mad;
    MadPeer to;
    Nanos expires;
  };
  std::map<SidrKey, SidrReply> sidr_replies_;
  std::set<std::pair<Nanos, SidrKey>> sidr_expiry_;
  std::unordered_map<CmId, SidrKey> sidr_key_of_;
  // Requests no listener took yet (CmConfig::unmatched_request_hold), oldest first.
  struct HeldRequest {
    std::vector<std::byte> mad;
    MadPeer from;
    std::uint64_t service_id = 0;
    Nanos until = 0;
  };
  std::vector<HeldRequest> held_;
  bool replaying_ = false;  // a held request is being handled again: no second hold
};

}  // namespace roce::cm
