#include "verbs/service.hpp"

#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "lib/time.hpp"
#include "verbs/port_quiet.hpp"

namespace roce::verbs {
namespace {

using service::Op;

void log(const std::string& what) { std::fprintf(stderr, "roce-verbsd: %s\n", what.c_str()); }

// The control loop's naps (run()). It spins while anything moves; on 2 CPUs a spinning service
// beside a program spinning on its buffer and a peer spinning on the link is one busy thread too
// many, and the scheduler then shares the CPUs out in slices of milliseconds (ib_write_lat
// through the service: 565 us a round trip when the loop only napped after 1 ms of quiet). So
// it naps after a quiet of a few round trips (as long as library mode's linger), for a quarter
// of the quiet so far: a program that answers at once finds the loop still spinning, one idle
// for long costs few wake-ups. 20 us gave 87-163 us round trips where 50 us gave 139-346 (load 9).
constexpr Nanos kQuietBeforeNap = 20 * kMicro;
constexpr Nanos kNapFirst = 10 * kMicro;
constexpr Nanos kNapMost = 200 * kMicro;

Nanos monotonic_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return Nanos{t.tv_sec} * kSecond + t.tv_nsec;
}

void nap(Nanos ns) {
  const timespec ts{0, static_cast<long>(ns)};
  ::clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr);
}

sockaddr_un socket_address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.data(), std::min(path.size(), sizeof a.sun_path - 1));
  return a;
}

// A socket file left by a service that is gone refuses connections; a live one accepts.
bool someone_listens(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const sockaddr_un a = socket_address(path);
  const bool live = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return live;
}

template <typename T>
void put(service::Reply& r, const T& v) {
  static_assert(sizeof(T) <= service::kBodyBytes);
  std::memcpy(r.body, &v, sizeof v);
  r.size = sizeof v;
}

// What a program of the service can use, which is less than the in-process device offers: SRQs
// that are not resized, and the rings' limits on SGEs per WQE and entries per CQ, queue or SRQ. So a program that sizes itself from ibv_query_device
// (perftest, ibv_devinfo) reads a device that has what it is served.
void limit_to_service_mode(ibv_device_attr& a) {
  a.max_srq_wr = std::min(a.max_srq_wr, static_cast<int>(service::kMaxRingEntries));
  a.max_srq_sge = std::min(a.max_srq_sge, static_cast<int>(service::kMaxWqeSge));
  a.device_cap_flags &= ~static_cast<unsigned>(IBV_DEVICE_SRQ_RESIZE);
  a.max_sge = std::min(a.max_sge, static_cast<int>(service::kMaxWqeSge));
  a.max_sge_rd = std::min(a.max_sge_rd, static_cast<int>(service::kMaxWqeSge));
  a.max_cqe = std::min(a.max_cqe, static_cast<int>(service::kMaxRingEntries));
  a.max_qp_wr = std::min(a.max_qp_wr, static_cast<int>(service::kMaxRingEntries));
}

}  // namespace

Result<std::unique_ptr<VerbsService>> VerbsService::create(const ServiceOptions& o) {
  if (o.socket_path.empty() || o.socket_path.size() >= sizeof(sockaddr_un::sun_path))
    return make_error(EINVAL, "bad socket path '" + o.socket_path + "' (1..107 bytes)");
  std::unique_ptr<VerbsService> s(new VerbsService());
  s->opt_ = o;
  // The device of this process: libroce-verbs.so in library mode (configured from ROCE_VERBS_ARGS).
  int n = 0;
  s->devices_ = (ibv_get_device_list)(&n);  // the function, not verbs.h's static-provider macro
  if (s->devices_ == nullptr || n < 1) return make_error(ENODEV, "no device (the device options are wrong; see above)");
  s->anchor_ = ibv_open_device(s->devices_[0]);
  if (s->anchor_ == nullptr) return make_error(errno ? errno : ENODEV, "cannot open the device (see above)");
  s->name_ = s->devices_[0]->name;

  const std::filesystem::path path(o.socket_path);
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (std::filesystem::exists(path, ec)) {
    if (someone_listens(o.socket_path)) return make_error(EADDRINUSE, "a service already listens on " + o.socket_path);
    std::filesystem::remove(path, ec);
  }
  s->listen_fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s->listen_fd_ < 0) return make_error(errno, std::string("socket: ") + std::strerror(errno));
  const sockaddr_un a = socket_address(o.socket_path);
  if (::bind(s->listen_fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 || ::listen(s->listen_fd_, 64) != 0)
    return make_error(errno, "cannot listen on " + o.socket_path + ": " + std::strerror(errno));
  return s;
}

VerbsService::~VerbsService() {
  for (auto& c : clients_) drop(*c);
  clients_.clear();
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    std::error_code ec;
    std::filesystem::remove(opt_.socket_path, ec);
  }
  if (anchor_) ibv_close_device(anchor_);
  if (devices_) ibv_free_device_list(devices_);
}

void VerbsService::run(const std::atomic<bool>& stop) {
  // Naps of microseconds: the default 50 us timer slack would stretch each of them.
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  std::vector<pollfd> fds;
  Nanos last_moved = monotonic_ns();
  Nanos last_control = last_moved;
  while (!stop.load(std::memory_order_relaxed)) {
    // The data path first: while programs have rings the loop spins, and naps once neither the
    // rings nor the port moved for kQuietBeforeNap (then a WQE or a frame waits up to one nap).
    bool rings = false;
    for (auto& c : clients_) rings |= !c->qps.empty() || !c->cqs.empty();
    int timeout = 200;  // ms: so that `stop` is seen without a signal interrupting poll()
    if (rings) {
      const Nanos now = monotonic_ns();
      if (pump()) last_moved = now;
      timeout = 0;
      const Nanos port_quiet = roce_verbs_port_quiet_ns();  // -1: no device (never here: the anchor runs one)
      const Nanos quiet = port_quiet < 0 ? now - last_moved : std::min<Nanos>(now - last_moved, port_quiet);
      if (quiet > kQuietBeforeNap) nap(std::clamp(quiet / 4, kNapFirst, kNapMost));
      // While the rings move, the control sockets are looked at every 100 us, not after every
      // pass: a poll() per pass was most of the loop's time (a system call is dear in a guest).
      else if (now - last_control < 100 * kMicro) continue;
      last_control = now;
    }
    fds.clear();
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto& c : clients_) fds.push_back({c->fd, POLLIN, 0});
    const std::size_t cm_first = fds.size();
    cm_poll_fds(fds);
    const std::size_t async_first = fds.size();
    async_poll_fds(fds);
    const int ready = ::poll(fds.data(), fds.size(), timeout);
    if (ready <= 0) continue;
    const auto any_ready = [&](std::size_t from, std::size_t to) {
      return std::any_of(fds.begin() + static_cast<std::ptrdiff_t>(from), fds.begin() + static_cast<std::ptrdiff_t>(to),
                         [](const pollfd& p) { return p.revents != 0; });
    };
    const bool cm_events = any_ready(cm_first, async_first);
    const bool async_events = any_ready(async_first, fds.size());
    // Clients first (their indexes match fds), then new ones.
    for (std::size_t i = clients_.size(); i-- > 0;) {
      if (fds[i + 1].revents == 0) continue;
      if (!serve(*clients_[i])) {
        drop(*clients_[i]);
        clients_.erase(clients_.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    if (fds[0].revents & POLLIN) accept_clients();
    if (cm_events) cm_deliver();
    if (async_events) async_deliver();
  }
  for (auto& c : clients_) drop(*c);
  clients_.clear();
}

void VerbsService::accept_clients() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;  // EAGAIN: none left; anything else: the program gave up, nothing to do
    ucred cred{};
    socklen_t len = sizeof cred;
    ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
    if (clients_.size() >= opt_.max_clients) {
      log("refused program " + std::to_string(cred.pid) + ": " + std::to_string(opt_.max_clients) + " connections open");
      ::close(fd);
      continue;
    }
    auto c = std::make_unique<Client>();
    c->fd = fd;
    c->pid = cred.pid;
    clients_.push_back(std::move(c));
  }
}

bool VerbsService::serve(Client& c) {
  service::Request req;
  iovec iov{&req, sizeof req};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * service::kMaxFiles)];
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  const ssize_t n = ::recvmsg(c.fd, &m, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
  if (n == 0) return false;  // the program closed its context, exited or was killed
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  // Every file that came along is closed once the request is answered, whatever the answer.
  std::vector<int> files;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&m); cm != nullptr; cm = CMSG_NXTHDR(&m, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < k; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
      files.push_back(fd);
    }
  }
  service::Reply rep;
  if (static_cast<std::size_t>(n) < service::kRequestHeader || static_cast<std::size_t>(n) > sizeof req) {
    rep.err = EINVAL;  // not a request record (MSG_TRUNC gives a longer record's real length)
  } else if (m.msg_flags & MSG_CTRUNC) {
    rep.err = EINVAL;  // more files than any request carries (the kernel closed the rest)
  } else if (req.version != service::kProtocolVersion) {
    rep.err = EPROTO;
  } else {
    answer(c, req, static_cast<std::size_t>(n) - service::kRequestHeader, files, rep);
  }
  for (int fd : files) ::close(fd);
  // A program that does not read its answers is broken: it is dropped rather than waited for.
  return ::send(c.fd, &rep, service::kReplyHeader + rep.size, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0;
}

void VerbsService::answer(Client& c, const service::Request& r, std::size_t len, const std::vector<int>& files,
                          service::Reply& out) {
  // Only these take files.
  if (!files.empty() && r.op != Op::RegMr && r.op != Op::CreateCq && r.op != Op::CreateQp && r.op != Op::Cm &&
      r.op != Op::CreateSrq && r.op != Op::Open) {
    out.err = EINVAL;
    return;
  }
  // The per-program cap on each kind of object.
  const std::size_t held = r.op == Op::AllocPd    ? c.pds.size()
                           : r.op == Op::RegMr    ? c.mrs.size()
                           : r.op == Op::CreateCq ? c.cqs.size()
                           : r.op == Op::CreateQp ? c.qps.size()
                           : r.op == Op::CreateAh ? c.ahs.size()
                           : r.op == Op::CreateSrq ? c.srqs.size()
                           : r.op == Op::AllocMw ? c.mws.size()
                                                  : 0;
  if (held >= opt_.max_per_client) {
    out.err = ENOMEM;
    return;
  }
  switch (r.op) {
    case Op::Hello: {
      service::HelloReply h;
      std::snprintf(h.device_name, sizeof h.device_name, "%s", name_.c_str());
      put(out, h);
      return;
    }
    case Op::Open: {
      if (c.ctx != nullptr || c.cm) {
        out.err = EBUSY;  // one context per connection, and none on an rdma_cm connection
        return;
      }
      if (files.size() > 1) {
        out.err = EINVAL;
        return;
      }
      c.ctx = ibv_open_device(devices_[0]);
      if (c.ctx == nullptr) {
        out.err = errno ? errno : ENODEV;
        return;
      }
      out.err = async_open(c, files);
      if (out.err != 0) {
        ibv_close_device(c.ctx);
        c.ctx = nullptr;
      }
      return;
    }
    case Op::QueryDevice: {
      ibv_device_attr a{};
      if ((out.err = ibv_query_device(anchor_, &a)) == 0) {
        limit_to_service_mode(a);
        put(out, a);
      }
      return;
    }
    case Op::QueryPort: {
      ibv_port_attr a{};
      if (r.arg > 0xFF) {
        out.err = EINVAL;
        return;
      }
      if ((out.err = ibv_query_port(anchor_, static_cast<std::uint8_t>(r.arg), &a)) == 0) put(out, a);
      return;
    }
    case Op::QueryGid: {
      ibv_gid_entry e{};
      if ((out.err = ibv_query_gid_ex(anchor_, 1, r.arg, &e, 0)) == 0) put(out, e);
      return;
    }
    case Op::Status: {
      service::StatusReply s;
      s.connections = static_cast<std::uint32_t>(clients_.size());
      for (const auto& k : clients_) {
        s.contexts += k->ctx != nullptr;
        s.pds += static_cast<std::uint32_t>(k->pds.size());
        s.mrs += static_cast<std::uint32_t>(k->mrs.size());
        s.cqs += static_cast<std::uint32_t>(k->cqs.size());
        s.qps += static_cast<std::uint32_t>(k->qps.size());
        for (const auto& [h, region] : k->mrs) s.mapped_bytes += region.map_bytes;
        s.cm_ids += cm_ids(*k);
      }
      s.cm_events_dropped = cm_events_dropped_;
      s.async_events_dropped = async_events_dropped_;
      put(out, s);
      return;
    }
    case Op::AllocPd: {
      if (c.ctx == nullptr) {
        out.err = EINVAL;  // no context opened on this connection
        return;
      }
      ibv_pd* pd = ibv_alloc_pd(c.ctx);
      if (pd == nullptr) {
        out.err = errno ? errno : ENOMEM;
        return;
      }
      const std::uint32_t h = c.next_handle++;
      c.pds.emplace(h, pd);
      put(out, service::Handle{h});
      return;
    }
    case Op::DeallocPd: {
      const auto it = c.pds.find(r.handle);
      if (it == c.pds.end()) {
        out.err = EINVAL;
        return;
      }
      if ((out.err = ibv_dealloc_pd(it->second)) == 0) c.pds.erase(it);
      return;
    }
    case Op::RegMr:
      out.err = reg_mr(c, r, len, files, out);
      return;
    case Op::DeregMr: {
      const auto it = c.mrs.find(r.handle);
      if (it == c.mrs.end()) {
        out.err = EINVAL;
        return;
      }
      const std::uint32_t lkey = it->second.mr->lkey;
      if ((out.err = ibv_dereg_mr(it->second.mr)) == 0) {
        c.mr_by_lkey.erase(lkey);
        ::munmap(it->second.map, it->second.map_bytes);
        c.mrs.erase(it);
      }
      return;
    }
    case Op::ProbeWrite:
      out.err = opt_.allow_probe ? probe_write(c, r, len, out) : EPERM;
      return;
    case Op::CreateCq:
      out.err = create_cq(c, r, len, files, out);
      return;
    case Op::DestroyCq:
      out.err = destroy_cq(c, r.handle);
      return;
    case Op::CreateQp:
      out.err = create_qp(c, r, len, files, out);
      return;
    case Op::ModifyQp:
      out.err = modify_qp(c, r, len);
      return;
    case Op::QueryQp:
      out.err = query_qp(c, r, out);
      return;
    case Op::DestroyQp:
      out.err = destroy_qp(c, r.handle);
      return;
    case Op::CreateAh: {
      const auto pd = c.pds.find(r.handle);
      ibv_ah_attr a{};
      if (pd == c.pds.end() || len < sizeof a) {
        out.err = EINVAL;
        return;
      }
      std::memcpy(&a, r.body, sizeof a);
      ibv_ah* ah = ibv_create_ah(pd->second, &a);
      if (ah == nullptr) {
        out.err = errno ? errno : EINVAL;
        return;
      }
      const std::uint32_t h = c.next_handle++;
      c.ahs.emplace(h, ah);
      put(out, service::Handle{h});
      return;
    }
    case Op::Cm:
      out.err = cm_request(c, r, len, files, out);
      return;
    case Op::CreateSrq:
      out.err = create_srq(c, r, len, files, out);
      return;
    case Op::ModifySrq:
      out.err = modify_srq(c, r, len);
      return;
    case Op::QuerySrq:
      out.err = query_srq(c, r, out);
      return;
    case Op::DestroySrq:
      out.err = destroy_srq(c, r.handle);
      return;
    case Op::AllocMw:
      out.err = alloc_mw(c, r, out);
      return;
    case Op::DeallocMw:
      out.err = dealloc_mw(c, r.handle);
      return;
    case Op::DestroyAh: {
      const auto it = c.ahs.find(r.handle);
      if (it == c.ahs.end()) {
        out.err = EINVAL;
        return;
      }
      if ((out.err = ibv_destroy_ah(it->second)) == 0) c.ahs.erase(it);
      return;
    }
  }
  out.err = EOPNOTSUPP;  // an operation this service does not know
}

void VerbsService::drop(Client& c) {
  c.cm.reset();  // its rdma_cm IDs destroyed (REJ, DREQ as their state asks), then its channels
  for (auto& [h, q] : c.qps) cm_forget_qp(q.qp);
  if (c.ctx) ibv_close_device(c.ctx);  // frees whatever the program left on it
  c.ctx = nullptr;
  // Its MRs, QPs and CQs are gone with the context: nothing reaches their pages any more.
  for (auto& [h, region] : c.mrs) ::munmap(region.map, region.map_bytes);
  c.mr_by_lkey.clear();
  c.mrs.clear();
  for (auto& [h, q] : c.qps) ::munmap(q.map, q.map_bytes);
  c.qps.clear();
  for (auto& [h, q] : c.srqs) ::munmap(q.map, q.map_bytes);
  c.srqs.clear();
  for (auto& [h, q] : c.cqs) {
    ::munmap(q.map, q.map_bytes);
    if (q.event_fd >= 0) ::close(q.event_fd);
  }
  c.cqs.clear();
  c.pds.clear();
  c.ahs.clear();
  c.mws.clear();
  if (c.async_sock >= 0) ::close(c.async_sock);
  c.async_sock = -1;
  if (c.fd >= 0) ::close(c.fd);
  c.fd = -1;
}

}  // namespace roce::verbs
