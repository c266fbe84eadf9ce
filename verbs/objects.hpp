// The verbs objects our library hands to programs. Each one embeds the libibverbs struct the
// program sees as its first base, so a pointer a program passes back converts to ours with a
// static_cast; a magic number tells our objects from anything else (a foreign or freed pointer
// gets EINVAL, not a crash where it can be caught).
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <deque>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "lib/rdma/engine.hpp"
#include "verbs/runtime.hpp"
#include "verbs/service_client.hpp"

namespace roce::verbs {

enum class Magic : std::uint32_t {
  Dead = 0,
  Context = 0x52444331,
  Pd = 0x52445031,
  Mr = 0x52444d31,
  Cq = 0x52444351,
  CqClosing = 0x52444358,
  Qp = 0x52445131,
  Ah = 0x52444131,
  Channel = 0x52444e31,
  Srq = 0x52445331,
  Mw = 0x52444d57,
};

struct Context;

struct Pd : ibv_pd {
  Magic magic = Magic::Pd;
  rdma::PdHandle handle = 0;
  std::uint32_t users = 0;  // MRs, QPs and AHs made in it (dealloc is EBUSY until 0)
  std::uint32_t service_handle = 0;  // service mode: the service's name for it
};

struct Mr : ibv_mr {
  Magic magic = Magic::Mr;
  std::uint32_t service_handle = 0;  // service mode: the service's name for it
};

struct Cq;
struct ServiceCqRing;   // service mode (service_verbs.hpp)
struct ServiceQpRings;
struct ServiceAh;
struct ServiceSrqRing;

struct Channel : ibv_comp_channel {
  Magic magic = Magic::Channel;
  std::mutex mutex;
  std::deque<Cq*> events;  // CQs whose event is waiting for ibv_get_cq_event
  std::uint32_t cqs = 0;   // CQs using it (destroy is EBUSY until 0)
};

struct Cq : ibv_cq_ex, CompletionWatch {
  Magic magic = Magic::Cq;
  Runtime* rt = nullptr;
  rdma::CompletionQueue* impl = nullptr;
  Channel* notify = nullptr;
  bool armed = false;
  std::uint32_t events_read = 0;  // events ibv_get_cq_event returned (guarded by mutex)
  std::uint32_t qps = 0;          // QPs using it
  // ibv_cq_ex polling: the entries taken by start_poll/next_poll, one at a time.
  ibv_wc current{};
  ServiceCqRing* ring = nullptr;  // service mode: the completion ring shared with the service

  bool check() override;
  void signal();
};

struct Qp : ibv_qp_ex {
  Magic magic = Magic::Qp;
  Runtime* rt = nullptr;
  rdma::QueuePair* impl = nullptr;
  bool extended = false;    // made with send_ops_flags: ibv_qp_to_qp_ex gives it out
  ibv_ah_attr av{};         // the last address vector (ibv_query_qp)
  std::uint8_t port_num = 1;
  // ibv_wr_* (the extended send API): the WRs between wr_start and wr_complete.
  struct Pending {
    ibv_send_wr wr{};
    std::uint32_t first_sge = 0;
    bool inline_data = false;
    std::uint32_t inline_at = 0;  // this WR's inline bytes in inline_bytes
    std::uint32_t inline_len = 0;
    ibv_sge inline_sge{};
  };
  std::vector<Pending> batch;
  std::vector<ibv_sge> sges;
  std::vector<std::byte> inline_bytes;
  int batch_error = 0;
  ServiceQpRings* rings = nullptr;  // service mode: the WQE rings shared with the service
};

struct Mw : ibv_mw {
  Magic magic = Magic::Mw;
  Runtime* rt = nullptr;
  rdma::MemoryWindow* impl = nullptr;
  std::uint32_t service_handle = 0;  // service mode: the service's name for it
};

struct Srq : ibv_srq {
  Magic magic = Magic::Srq;
  Runtime* rt = nullptr;
  rdma::SharedReceiveQueue* impl = nullptr;
  ServiceSrqRing* ring = nullptr;  // service mode: the receive WQE ring shared with the service
};

// The context's asynchronous events (ibv_get_async_event): after every dataplane iteration
// (the lock held) the context's SRQs and their QPs are asked for the events the engine raised
// (SRQ limit reached, last WQE reached); each becomes an ibv_async_event queued here and one
// count on the context's async_fd (a semaphore eventfd).
struct AsyncEvents : CompletionWatch {
  struct Context* owner = nullptr;
  std::mutex mutex;
  std::deque<ibv_async_event> queue;
  bool check() override;  // never ends: the watch stays for the context's life
};

struct Context : verbs_context {
  Magic magic = Magic::Context;
  Runtime* rt = nullptr;  // library mode: the engine in this process
  // Service mode (rt is null): the connection to roce-verbsd that owns this context's objects.
  std::unique_ptr<ServiceConnection> service;
  std::mutex service_mutex;  // service mode: guards the object sets below (no engine lock here)
  std::unordered_set<ServiceAh*> service_ahs;  // service mode's AHs (ahs holds the engine's)
  AsyncEvents async;
  // Every object made on this context, freed by ibv_close_device if the program did not.
  // Guarded by the engine lock.
  std::unordered_set<Pd*> pds;
  std::unordered_set<Mr*> mrs;
  std::unordered_set<Cq*> cqs;
  std::unordered_set<Qp*> qps;
  std::unordered_set<rdma::AddressHandle*> ahs;
  std::unordered_set<Channel*> channels;
  std::unordered_set<Srq*> srqs;
  std::unordered_set<Mw*> mws;
};

inline Context* to_context(ibv_context* c) {
  if (c == nullptr) return nullptr;
  auto* v = reinterpret_cast<verbs_context*>(reinterpret_cast<char*>(c) - offsetof(verbs_context, context));
  auto* ours = static_cast<Context*>(v);
  return ours->magic == Magic::Context ? ours : nullptr;
}

template <typename T, typename Base>
T* ours(Base* b, Magic m) {
  if (b == nullptr) return nullptr;
  T* t = static_cast<T*>(b);
  return t->magic == m ? t : nullptr;
}

inline Pd* to_pd(ibv_pd* p) { return ours<Pd>(p, Magic::Pd); }
inline Mr* to_mr(ibv_mr* m) { return ours<Mr>(m, Magic::Mr); }
inline Channel* to_channel(ibv_comp_channel* c) { return ours<Channel>(c, Magic::Channel); }
inline Cq* to_cq(ibv_cq* c) { return ours<Cq>(reinterpret_cast<ibv_cq_ex*>(c), Magic::Cq); }
inline Cq* to_cq(ibv_cq_ex* c) { return ours<Cq>(c, Magic::Cq); }
inline Qp* to_qp(ibv_qp* q) { return ours<Qp>(reinterpret_cast<ibv_qp_ex*>(q), Magic::Qp); }
inline Qp* to_qp(ibv_qp_ex* q) { return ours<Qp>(q, Magic::Qp); }
inline Srq* to_srq(ibv_srq* s) { return ours<Srq>(s, Magic::Srq); }
inline Mw* to_mw(ibv_mw* m) { return ours<Mw>(m, Magic::Mw); }
inline Context* context_of(ibv_context* c) { return to_context(c); }

// Service mode serves its verbs in slices (docs/verbs.md); a verb of a slice not built yet
// answers EOPNOTSUPP on a service context, said once on stderr.
bool not_served(const Context& c, const char* verb);

// Frees one of our objects; its magic is cleared first, so a stale pointer to it is told apart
// for as long as the allocator leaves the memory alone.
template <typename T>
void retire(T* o) {
  o->magic = Magic::Dead;
  delete o;
}

// Sets errno and returns the null pointer a failed create returns.
template <typename T = void>
T* fail(int err) {
  errno = err;
  return nullptr;
}

// Prints a set-up error on the program's stderr (once per message kind is enough for programs
// that retry), prefixed with the library's name.
void report(const std::string& what);

}  // namespace roce::verbs
