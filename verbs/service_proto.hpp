// Service mode's control protocol (docs/verbs.md, "2. Service mode"): the records a program's
// libroce-verbs.so (the client half) and roce-verbsd exchange over a SOCK_SEQPACKET UNIX socket,
// one socket per ibv_context. One request, one answer, both fixed-size records; the answer's
// errno is the one the in-process device gives for the same verb, because the service answers
// with the same code (it runs the verbs on its own in-process device). Files cross beside a
// record with SCM_RIGHTS. Both ends run on one host from one build: attribute structs travel
// as libibverbs lays them out.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

namespace roce::verbs::service {

inline constexpr std::uint32_t kProtocolVersion = 1;
inline constexpr std::size_t kBodyBytes = 512;
inline constexpr std::size_t kNameBytes = 64;
inline constexpr std::size_t kMaxFiles = 16;  // files crossing with one record

enum class Op : std::uint32_t {
  Hello = 1,        // first record on a connection: version check; answer: HelloReply
  Open = 2,         // the connection becomes a context: the service opens one for it; files: [the
                    // service's end of the context's async event socket pair (AsyncEventRecord)]
  QueryDevice = 3,  // answer: ibv_device_attr
  QueryPort = 4,    // arg: port number; answer: ibv_port_attr
  QueryGid = 5,     // arg: GID index; answer: ibv_gid_entry (port 1)
  Status = 6,       // answer: StatusReply (what the service holds; for operators and tests)
  AllocPd = 7,      // answer: Handle
  DeallocPd = 8,    // handle: the PD
  RegMr = 9,        // handle: the PD; body: RegMrRequest, one memfd per segment; answer: RegMrReply
  DeregMr = 10,     // handle: the MR
  // Only when roce-verbsd runs with --allow-probe (tests): the service WRITEs `length` bytes of
  // `pattern` from a QP pair of its own in the program's PD through the looped-back port into
  // (addr, rkey), and answers with the completion's status (0, or EIO and the ibv_wc_status).
  ProbeWrite = 11,  // handle: the PD; body: ProbeWriteRequest; answer: Handle (the wc status)
  // Slice 3 (service_rings.hpp): CQs and QPs with their rings.
  CreateCq = 12,    // body: CreateCqRequest; files: the ring's memfd [, the channel's eventfd]
  DestroyCq = 13,   // handle: the CQ
  CreateQp = 14,    // handle: the PD; body: CreateQpRequest; files: the rings' memfd
  ModifyQp = 15,    // handle: the QP; body: ModifyQpRequest
  QueryQp = 16,     // handle: the QP; arg: the mask; answer: QueryQpReply
  DestroyQp = 17,   // handle: the QP
  CreateAh = 18,    // handle: the PD; body: ibv_ah_attr; answer: Handle
  DestroyAh = 19,   // handle: the AH
  // Shared receive queues (service_rings.hpp): a ring of receive WQEs per SRQ.
  CreateSrq = 20,   // handle: the PD; body: CreateSrqRequest; files: the ring's memfd; answer: CreateSrqReply
  ModifySrq = 21,   // handle: the SRQ; body: ModifySrqRequest
  QuerySrq = 22,    // handle: the SRQ; answer: ibv_srq_attr
  DestroySrq = 23,  // handle: the SRQ
  // Memory windows: bound by WQEs in the send ring (service_rings.hpp's SendWqe::bind).
  AllocMw = 24,     // handle: the PD; arg: the ibv_mw_type; answer: AllocMwReply
  DeallocMw = 25,   // handle: the window
  // Slice 5 (cm_proto.hpp): rdma_cm, on a connection of its own; arg: the CmOp. Numbered apart
  // from the verbs' requests, which keep the numbers after DestroyAh.
  Cm = 64,
};

struct AllocMwReply {
  std::uint32_t handle = 0;
  std::uint32_t rkey = 0;
};

struct Request {
  std::uint32_t version = kProtocolVersion;
  Op op{};
  std::uint32_t handle = 0;  // the object the verb is about (0: the connection's context)
  std::uint32_t arg = 0;
  std::uint8_t body[kBodyBytes]{};
};
inline constexpr std::size_t kRequestHeader = offsetof(Request, body);

struct Reply {
  std::int32_t err = 0;  // 0 or the verb's errno
  std::uint32_t size = 0;  // bytes of body that follow
  std::uint8_t body[kBodyBytes]{};
};
inline constexpr std::size_t kReplyHeader = offsetof(Reply, body);

struct HelloReply {
  std::uint32_t version = kProtocolVersion;
  char device_name[kNameBytes]{};
};

struct StatusReply {
  std::uint32_t connections = 0;  // connected programs (and probes)
  std::uint32_t contexts = 0;     // of them, opened contexts
  std::uint32_t pds = 0;          // objects the programs hold, all contexts together
  std::uint32_t mrs = 0;
  std::uint32_t cqs = 0;
  std::uint32_t qps = 0;
  std::uint64_t mapped_bytes = 0;  // of the programs' memory, mapped in the service
  std::uint32_t cm_ids = 0;        // rdma_cm IDs the programs hold (slice 5)
  std::uint64_t cm_events_dropped = 0;  // events of channels closed because their program stopped reading
  std::uint64_t async_events_dropped = 0;  // asynchronous events a program's full event socket refused
};

// An asynchronous event of one of a program's objects (ibv_get_async_event): the service takes
// the events its own context for the program raises (library mode's, so the same events) and
// sends each as one record on the context's event socket, a SOCK_SEQPACKET pair whose program
// end is the context's async_fd (pollable; O_NONBLOCK gives EAGAIN, as on a uverbs file).
struct AsyncEventRecord {
  std::uint32_t event_type = 0;  // ibv_event_type
  std::uint32_t element = 0;     // the handle of the QP, SRQ or CQ it names, or the port number
};

// What an event type names (ibv_async_event::element), as libibverbs' ibv_event_type groups them.
enum class AsyncElement { Qp, Srq, Cq, Port };
inline AsyncElement element_of(ibv_event_type t) {
  switch (t) {
    case IBV_EVENT_CQ_ERR:
      return AsyncElement::Cq;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      return AsyncElement::Srq;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      return AsyncElement::Qp;
    default:  // the port's and the device's events
      return AsyncElement::Port;
  }
}

struct Handle {
  std::uint32_t value = 0;
};

// A registration's pages, moved into memfds by the program (shared_memory.hpp): the segments
// cover [page_floor(addr), page_ceil(addr + length)) in order; segment i's memfd is the i-th
// file passed with the record. Each memfd must be sealed against shrinking.
inline constexpr std::uint32_t kMaxSegments = kMaxFiles;
struct RegMrRequest {
  std::uint64_t addr = 0;  // the program's address of the buffer
  std::uint64_t length = 0;
  std::uint64_t iova = 0;
  std::uint32_t access = 0;
  std::uint32_t segments = 0;
  struct Segment {
    std::uint64_t fd_offset = 0;  // page-aligned
    std::uint64_t length = 0;     // whole pages
  } segment[kMaxSegments];
};

struct RegMrReply {
  std::uint32_t handle = 0;
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
};

struct ProbeWriteRequest {
  std::uint64_t addr = 0;
  std::uint32_t rkey = 0;
  std::uint32_t length = 0;  // at most kProbeBytes
  std::uint8_t pattern = 0;
};
inline constexpr std::uint32_t kProbeBytes = 65536;

static_assert(sizeof(ibv_device_attr) <= kBodyBytes && sizeof(ibv_port_attr) <= kBodyBytes &&
              sizeof(ibv_gid_entry) <= kBodyBytes && sizeof(HelloReply) <= kBodyBytes &&
              sizeof(RegMrRequest) <= kBodyBytes);

}  // namespace roce::verbs::service
