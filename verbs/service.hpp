// roce-verbsd's service (docs/verbs.md, "2. Service mode"): one process owns the port and serves
// several verbs programs, each through its own connection on a UNIX socket (service_proto.hpp).
// The service is itself a verbs program on the in-process device of libroce-verbs.so (library
// mode: the EAL, the port, the engine and its dataplane thread), and answers each request by
// running the same verb there, so a program gets library mode's errnos. Every object a program
// makes belongs to its connection; when the socket closes (exit, crash, SIGKILL) the service
// frees exactly that connection's objects (ibv_close_device of its context) and nobody else's.
#pragma once

#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/status.hpp"
#include "verbs/service_proto.hpp"
#include "verbs/service_rings.hpp"

namespace roce::verbs {

struct CmClient;  // a program's rdma_cm connection (service_cm.cpp)
struct CmClientFree {
  void operator()(CmClient* c) const;
};

struct ServiceOptions {
  std::string socket_path;
  std::uint32_t max_clients = 64;  // connections at once; more are refused (closed at accept)
  bool allow_probe = false;        // answer ProbeWrite (tests): a WRITE into a program's MR
  // Objects of each kind (PDs, MRs, CQs, QPs, AHs) one program may hold, so that one program
  // cannot exhaust the device's tables for the others: one more is ENOMEM.
  std::uint32_t max_per_client = 256;
  // Bytes of a program's memory one program may have mapped into the service at once (its
  // registered buffers' pages and its CQ and QP rings), so that one program cannot fill the
  // service's address space: a registration or ring past it is ENOMEM.
  std::uint64_t max_map_bytes = std::uint64_t{64} << 30;
};

// A SOCK_SEQPACKET UNIX socket: what a program's end of an event socket pair (rdma_cm channel,
// async events) must be, since events cross as records (service_cm.cpp).
bool is_record_socket(int fd);

class VerbsService {
 public:
  // Opens the device (brings the port up) and listens on the socket. A socket file nobody
  // answers on is a dead service's and is replaced; a live one is EADDRINUSE.
  static Result<std::unique_ptr<VerbsService>> create(const ServiceOptions& o);
  ~VerbsService();
  VerbsService(const VerbsService&) = delete;
  VerbsService& operator=(const VerbsService&) = delete;

  // The control loop: accepts programs and answers their requests until `stop` is set, then
  // frees every program's objects and removes the socket file.
  void run(const std::atomic<bool>& stop);
  const std::string& device_name() const { return name_; }

 private:
  // A program's registration: its MR in the service and the service's mapping of its pages.
  struct Region {
    ibv_mr* mr = nullptr;
    void* map = nullptr;
    std::size_t map_bytes = 0;
    std::uint64_t program_addr = 0;  // mr->addr is the service's view of it
  };
  // A program's CQ: the service's CQ and the ring its completions are copied into.
  struct CqState {
    ibv_cq* cq = nullptr;
    void* map = nullptr;
    std::size_t map_bytes = 0;
    service::RingHeader* ring = nullptr;
    ibv_wc* entries = nullptr;
    std::uint32_t size = 0;
    std::uint32_t tail = 0;  // ours (the producer's); the shared copy is only published
    int event_fd = -1;       // the program's completion channel, or -1
    std::uint32_t qps = 0;
  };
  // A program's QP: the service's QP and the rings its WQEs are taken from.
  struct QpState {
    ibv_qp* qp = nullptr;
    void* map = nullptr;
    std::size_t map_bytes = 0;
    service::RingHeader* sq = nullptr;
    service::SendWqe* sq_entries = nullptr;
    std::uint32_t sq_size = 0, sq_head = 0;  // heads: ours, as above
    service::RingHeader* rq = nullptr;
    service::RecvWqe* rq_entries = nullptr;
    std::uint32_t rq_size = 0, rq_head = 0;
    std::uint32_t send_cq = 0, recv_cq = 0;
    std::uint32_t srq = 0;  // its SRQ's handle, 0: none (then its receive ring is not read)
    std::uint32_t max_send_sge = 0, max_recv_sge = 0, max_inline = 0;
    bool ud = false;      // WQEs name an address handle
    bool broken = false;  // the program corrupted a ring index: its QP is in error, not drained
  };
  // A program's SRQ: the service's SRQ and the ring its receive WQEs are taken from.
  struct SrqState {
    ibv_srq* srq = nullptr;
    void* map = nullptr;
    std::size_t map_bytes = 0;
    service::RingHeader* ring = nullptr;
    service::RecvWqe* entries = nullptr;
    std::uint32_t size = 0, head = 0;  // head: ours, as above
    std::uint32_t max_sge = 0;
    std::uint32_t qps = 0;
    bool broken = false;  // the program corrupted its tail, or posted a WQE the SRQ refused
  };
  struct Client {
    int fd = -1;
    int pid = 0;                  // the program (SO_PEERCRED), for the log
    ibv_context* ctx = nullptr;   // after Open: the context owning the program's objects
    // The program's objects by the handles it was given (it names them by handle only).
    std::uint32_t next_handle = 1;
    std::unordered_map<std::uint32_t, ibv_pd*> pds;
    std::unordered_map<std::uint32_t, Region> mrs;
    std::unordered_map<std::uint32_t, const Region*> mr_by_lkey;  // for the SGEs in the rings
    std::unordered_map<std::uint32_t, CqState> cqs;
    std::unordered_map<std::uint32_t, QpState> qps;
    std::unordered_map<std::uint32_t, ibv_ah*> ahs;
    std::unordered_map<std::uint32_t, SrqState> srqs;
    std::unordered_map<std::uint32_t, ibv_mw*> mws;
    // The service's end of the context's async event socket pair (Open), or -1: the events its
    // context raises go there (service_async.cpp).
    int async_sock = -1;
    bool async_full_said = false;  // the log said once that the program reads none of them
    // An rdma_cm connection instead (slice 5): the program's rdma_cm IDs and channels.
    std::unique_ptr<CmClient, CmClientFree> cm;
  };

  VerbsService() = default;
  void accept_clients();
  // Answers the client's pending requests; false when the client is gone or broke the protocol.
  bool serve(Client& c);
  // `files` came with the request; the service closes them afterwards (mappings keep what they need).
  void answer(Client& c, const service::Request& r, std::size_t len, const std::vector<int>& files, service::Reply& out);
  int reg_mr(Client& c, const service::Request& r, std::size_t len, const std::vector<int>& files, service::Reply& out);
  int probe_write(Client& c, const service::Request& r, std::size_t len, service::Reply& out);
  int create_cq(Client& c, const service::Request& r, std::size_t len, const std::vector<int>& files, service::Reply& out);
  int destroy_cq(Client& c, std::uint32_t handle);
  int create_qp(Client& c, const service::Request& r, std::size_t len, const std::vector<int>& files, service::Reply& out);
  int modify_qp(Client& c, const service::Request& r, std::size_t len);
  int query_qp(Client& c, const service::Request& r, service::Reply& out);
  int destroy_qp(Client& c, std::uint32_t handle);
  // SRQs (service_srq.cpp).
  int create_srq(Client& c, const service::Request& r, std::size_t len, const std::vector<int>& files, service::Reply& out);
  int modify_srq(Client& c, const service::Request& r, std::size_t len);
  int query_srq(Client& c, const service::Request& r, service::Reply& out);
  int destroy_srq(Client& c, std::uint32_t handle);
  // The data path, once per loop iteration: every program's rings drained into its QPs, every
  // CQ's completions copied into its ring. True when anything moved.
  bool pump();
  bool pump_qp(QpState& q, Client& c);
  bool pump_cq(CqState& q);
  bool pump_srq(SrqState& q, const Client& c);
  // Memory windows (service_mw.cpp); a bind WQE of a ring posted to the service's QP, returning
  // the post's errno.
  int alloc_mw(Client& c, const service::Request& r, service::Reply& out);
  int dealloc_mw(Client& c, std::uint32_t handle);
  static int post_bind(const Client& c, QpState& q, const service::SendWqe& w);
  // A WQE the service's QP refused: an error completion for it, and the QP to the error state.
  // A ring's SGE names the program's address; the engine takes local SGEs by the service's.
  static void translate(const Client& c, ibv_sge& sge);
  // A receive WQE of a ring as a WR for the service's QP or SRQ, its SGEs (in `sge`, room for
  // kMaxWqeSge) translated; false when it has more than `max_sge`.
  static bool recv_wr_from(const Client& c, const service::RecvWqe& w, std::uint32_t max_sge, ibv_sge* sge,
                           ibv_recv_wr& wr);
  void fail_wqe(Client& c, QpState& q, std::uint64_t wr_id, bool send, ibv_wc_status status);
  // rdma_cm (service_cm.cpp): the requests of a program's rdma_cm connection; its channels'
  // fds for the control loop's poll(), and their events pushed to the program once readable;
  // a QP about to be destroyed no longer an ID's.
  int cm_request(Client& c, const service::Request& r, std::size_t len, const std::vector<int>& files, service::Reply& out);
  int cm_attach_qp(const Client& c, rdma_cm_id& id, std::uint32_t qpn);
  void cm_poll_fds(std::vector<pollfd>& fds) const;
  void cm_deliver();
  void cm_forget_qp(const ibv_qp* qp);
  static std::uint32_t cm_ids(const Client& c);
  // Asynchronous events (service_async.cpp): Open's event socket taken, the programs'
  // contexts' async fds for the control loop's poll(), and their events sent to the programs.
  int async_open(Client& c, const std::vector<int>& files);
  void async_poll_fds(std::vector<pollfd>& fds) const;
  void async_deliver();
  // Whether `bytes` more may be mapped for the program (ServiceOptions::max_map_bytes).
  bool may_map(const Client& c, std::uint64_t bytes) const;
  void drop(Client& c);

  ServiceOptions opt_;
  std::string name_;
  ibv_device** devices_ = nullptr;
  ibv_context* anchor_ = nullptr;  // the service's own context: queries, and the port stays up
  int listen_fd_ = -1;
  std::vector<std::unique_ptr<Client>> clients_;
  std::uint64_t cm_events_dropped_ = 0;  // StatusReply::cm_events_dropped
  std::uint64_t async_events_dropped_ = 0;  // StatusReply::async_events_dropped
};

}  // namespace roce::verbs
