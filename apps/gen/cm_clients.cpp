#include "apps/gen/cm_clients.hpp"

// --vdev values hold commas (net_af_packet0,iface=...): no splitting into a vector.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

#include "client/buffers.hpp"
#include "client/driver_set.hpp"
#include "client/rping_info.hpp"
#include "client/runtime.hpp"
#include "dataplane/signals.hpp"
#include "lib/cm/ece.hpp"

namespace roce::client {

namespace {

using cm::RdmaCmEventType;

constexpr std::size_t kRecvSlot = 0, kSendSlot = 64, kData = 4096;
// rping's own bounds on -S (it says "valid range is 23 to 65536" and refuses 65536 itself).
constexpr std::uint32_t kRpingMinSize = 23;
constexpr std::uint32_t kRpingMaxSize = 65535;
// rdma_client's one message each way, sent inline.
constexpr std::uint32_t kRdmaClientMsg = 16;

// A source port in Linux's ephemeral range (32768..60999), as rdma_cm binds one for a client.
std::uint16_t ephemeral_port(Nanos now) { return static_cast<std::uint16_t>(32768 + (now / kMicro) % 28232); }

// The next rdma_cm event of connection `id` within `wait`.
Result<cm::RdmaCmEvent> next_event(CmService& cms, cm::CmId id, Nanos wait) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(wait);
  static thread_local std::vector<cm::RdmaCmEvent> pending;
  for (;;) {
    for (std::size_t i = 0; i < pending.size(); ++i)
      if (pending[i].id == id) {
        cm::RdmaCmEvent e = std::move(pending[i]);
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
        return e;
      }
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0 || dp::StopSignals::requested()) return make_error(ETIMEDOUT, "no rdma_cm event within the timeout");
    for (auto& e : cms.wait_events(left)) pending.push_back(std::move(e));
  }
}

std::string describe(const cm::RdmaCmEvent& e) {
  std::string s = cm::to_string(e.type);
  if (e.type == RdmaCmEventType::Rejected) s += " (reason " + std::to_string(e.status) + ")";
  return s;
}

// One RC connection's verbs on the control thread (each call runs on the QP's worker).
struct Qp {
  dp::Dataplane& dp;
  LocalQp q;
  std::byte* base = nullptr;
  const rdma::MemoryRegion* mr = nullptr;

  int post_recv(std::size_t off, std::uint32_t len) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(base + off), len, mr->lkey()};
    ibv_recv_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    return dp.call(q.worker, [&](rdma::Engine& e) {
      ibv_recv_wr* bad = nullptr;
      return e.post_recv(q.qp, &wr, &bad);
    });
  }
  int post_send(std::size_t off, std::uint32_t len, unsigned flags = 0) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(base + off), len, mr->lkey()};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED | flags;
    return dp.call(q.worker, [&](rdma::Engine& e) {
      ibv_send_wr* bad = nullptr;
      return e.post_send(q.qp, &wr, &bad);
    });
  }
  // Completions until `recvs` receives and `sends` sends have completed; an error completion ends it.
  Result<std::vector<ibv_wc>> wait(std::uint32_t recvs, std::uint32_t sends, Nanos timeout) {
    std::vector<ibv_wc> got;
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout);
    while (recvs > 0 || sends > 0) {
      ibv_wc wc[16];
      const int n = dp.call(q.worker, [&](rdma::Engine& e) { return e.poll_cq(q.cq, 16, wc); });
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS)
          return make_error(EIO, std::string("work completion error: ") + ibv_wc_status_str(wc[i].status));
        if (wc[i].opcode == IBV_WC_RECV && recvs > 0) --recvs;
        else if (wc[i].opcode == IBV_WC_SEND && sends > 0) --sends;
        got.push_back(wc[i]);
      }
      if (n > 0) continue;
      if (std::chrono::steady_clock::now() >= until || dp::StopSignals::requested())
        return make_error(ETIMEDOUT, "timed out waiting for " + std::to_string(recvs) + " receive(s) and " +
                                         std::to_string(sends) + " send(s) to complete");
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return got;
  }
};

// REQ, REP, the QP to RTS, RTU: rdma_connect's work. Returns the connection's ID.
// `agreed`: the reorder window of selective repeat the REP agreed to (0: go-back-N).
Result<cm::CmId> connect_rc(dp::Dataplane& dp, CmService& cms, const LocalQp& q, const CmClientOptions& o, std::uint8_t retry_count,
                            std::uint32_t* agreed) {
  cm::RdmaConnectParams cp;
  cp.port_space = proto::RdmaPortSpace::Tcp;
  cp.src = dp.local().ip;
  cp.dst = o.server;
  cp.src_port = ephemeral_port(dp.now());
  cp.dst_port = o.port;
  cp.ib.local_qpn = q.qpn;
  cp.ib.starting_psn = q.psn;
  cp.ib.responder_resources = 1;
  cp.ib.initiator_depth = 1;
  cp.ib.retry_count = retry_count;
  cp.ib.rnr_retry_count = 7;
  cp.ib.ece = cm::selective_repeat_ece(o.selective_repeat);
  const cm::CmQpLimits lim = cms.qp_limits();
  cp.ib.path_mtu = static_cast<proto::PathMtu>(lim.max_mtu);
  auto id = cms.connect(cp);
  if (!id) return id.error();
  auto rep = next_event(cms, *id, o.timeout);
  if (!rep) return make_error(ETIMEDOUT, "no answer to the connection request");
  if (rep->type != RdmaCmEventType::ConnectResponse) return make_error(ECONNREFUSED, "connection request: " + describe(*rep));
  const auto& info = std::get<cm::RepInfo>(rep->detail);
  const cm::CmQpAttrs attrs = cm::active_qp_attrs(cp.ib, info, lim);
  if (Status s = cms.connect_qp(q, IBV_QPT_RC, attrs); !s) return s.error();
  *agreed = attrs.selective_repeat;
  if (Status s = cms.ready_to_use(*id); !s) return s.error();
  auto est = next_event(cms, *id, o.timeout);
  if (!est) return est.error();
  if (est->type != RdmaCmEventType::Established) return make_error(ECONNABORTED, "after the RTU: " + describe(*est));
  return *id;
}

Result<CmClientResult> run_rping(dp::Dataplane& dp, CmService& cms, Qp& qp, const CmClientOptions& o,
                                 const std::function<void(const std::string&)>& say) {
  CmClientResult r;
  if (qp.post_recv(kRecvSlot, sizeof(RpingInfo))) return make_error(EIO, "post_recv failed");
  auto id = connect_rc(dp, cms, qp.q, o, 7, &r.selective_repeat);
  if (!id) return id.error();
  std::byte* start = qp.base + kData;
  std::byte* rdma = start + o.size;
  Status failed;
  const auto advertise = [&](std::byte* buf) -> Status {
    RpingInfo info;
    info.buf.set(qp.mr->iova + static_cast<std::uint64_t>(buf - qp.base));
    info.rkey.set(qp.mr->rkey());
    info.size.set(o.size);
    std::memcpy(qp.base + kSendSlot, &info, sizeof info);
    if (qp.post_send(kSendSlot, sizeof info)) return make_error(EIO, "post_send failed");
    auto wcs = qp.wait(1, 1, o.timeout);
    if (!wcs) return wcs.error();
    for (const ibv_wc& w : *wcs)
      if (w.opcode == IBV_WC_RECV && w.byte_len != sizeof(RpingInfo))
        return make_error(EPROTO, "received bogus data, size " + std::to_string(w.byte_len));
    if (qp.post_recv(kRecvSlot, sizeof(RpingInfo))) return make_error(EIO, "post_recv failed");
    return {};
  };
  unsigned char first = 65;
  for (std::uint32_t ping = 0; ping < o.count; ++ping) {
    // rping's round: "rdma-ping-N: " and then letters, each round starting one letter later.
    char* s = reinterpret_cast<char*>(start);
    int cc = std::snprintf(s, o.size, "rdma-ping-%u: ", ping);
    unsigned char c = first;
    for (std::uint32_t i = static_cast<std::uint32_t>(cc); i < o.size; ++i) {
      s[i] = static_cast<char>(c);
      if (++c > 122) c = 65;
    }
    if (++first > 122) first = 65;
    s[o.size - 1] = 0;
    std::memset(rdma, 0, o.size);
    if (failed = advertise(start); !failed) break;  // the server READs it, then says go ahead
    if (failed = advertise(rdma); !failed) break;   // the server WRITEs it back, then says so
    if (o.verify && std::memcmp(start, rdma, o.size) != 0) {
      ++r.mismatches;
      failed = make_error(EILSEQ, "data mismatch in round " + std::to_string(ping));
      break;
    }
    if (o.verbose) say("ping data: " + std::string(reinterpret_cast<const char*>(rdma)));
    ++r.rounds;
  }
  (void)cms.disconnect(*id);
  for (;;) {
    auto e = next_event(cms, *id, 3 * kSecond);
    if (!e || e->type == RdmaCmEventType::Disconnected) break;
  }
  if (!failed) return failed.error();
  return r;
}

Result<CmClientResult> run_ucmatose(dp::Dataplane& dp, CmService& cms, Qp& qp, const CmClientOptions& o,
                                    const std::function<void(const std::string&)>& say) {
  CmClientResult r;
  for (std::uint32_t i = 0; i < o.count; ++i)
    if (qp.post_recv(std::size_t{i} * o.size, o.size)) return make_error(EIO, "post_recv failed");
  say("cmatose: connecting");
  auto id = connect_rc(dp, cms, qp.q, o, 5, &r.selective_repeat);
  if (!id) return id.error();
  say("receiving data transfers");
  auto in = qp.wait(o.count, 0, o.timeout);
  if (!in) return in.error();
  r.messages_received = o.count;
  say("sending replies");
  const std::size_t out_off = std::size_t{o.count} * o.size;
  for (std::uint32_t i = 0; i < o.count; ++i)
    if (qp.post_send(out_off, o.size)) return make_error(EIO, "post_send failed");
  auto out = qp.wait(0, o.count, o.timeout);
  if (!out) return out.error();
  r.messages_sent = o.count;
  say("data transfers complete");
  // cmatose's client waits for the server to disconnect (and answers with its own DREQ).
  auto d = next_event(cms, *id, o.timeout);
  if (!d || d->type != RdmaCmEventType::Disconnected) {
    (void)cms.disconnect(*id);
    return make_error(ETIMEDOUT, "the server did not disconnect");
  }
  say("disconnected");
  return r;
}

Result<CmClientResult> run_udaddy(dp::Dataplane& dp, CmService& cms, Qp& qp, const CmClientOptions& o,
                                  const std::function<void(const std::string&)>& say) {
  CmClientResult r;
  constexpr std::uint32_t kGrh = 40;
  if (Status s = cms.ready_ud_qp(qp.q); !s) return s.error();
  for (std::uint32_t i = 0; i < o.count; ++i)
    if (qp.post_recv(std::size_t{i} * (o.size + kGrh), o.size + kGrh)) return make_error(EIO, "post_recv failed");
  say("udaddy: connecting");
  cm::RdmaUdResolveParams rp;
  rp.port_space = proto::RdmaPortSpace::Udp;
  rp.src = dp.local().ip;
  rp.dst = o.server;
  rp.src_port = ephemeral_port(dp.now());
  rp.dst_port = o.port;
  auto id = cms.resolve_ud(rp);
  if (!id) return id.error();
  auto ev = next_event(cms, *id, o.timeout);
  if (!ev) return make_error(ETIMEDOUT, "no answer to the SIDR request");
  if (ev->type != RdmaCmEventType::Established) return make_error(ECONNREFUSED, "SIDR request: " + describe(*ev));
  const auto& rep = std::get<cm::SidrRepInfo>(ev->detail);
  auto ah = dp.call(qp.q.worker, [&](rdma::Engine& e) {
    ibv_ah_attr a{};
    a.is_global = 1;
    a.grh.dgid = rdma::gid_from_ip(o.server);
    a.grh.hop_limit = 64;
    a.port_num = 1;
    return e.create_ah(qp.q.pd, a);
  });
  if (!ah) return ah.error();
  say("initiating data transfers");
  const std::size_t out = std::size_t{o.count} * (o.size + kGrh);
  Status sent;
  for (std::uint32_t i = 0; i < o.count && sent; ++i) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(qp.base + out), o.size, qp.mr->lkey()};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    const proto::Be32 imm = proto::Be32::of(qp.q.qpn);  // udaddy's servers answer the QPN it names
    std::memcpy(&wr.imm_data, imm.bytes.data(), imm.bytes.size());
    wr.wr.ud.ah = &(*ah)->base;
    wr.wr.ud.remote_qpn = rep.qpn;
    wr.wr.ud.remote_qkey = rep.qkey;
    const int rc = dp.call(qp.q.worker, [&](rdma::Engine& e) {
      ibv_send_wr* bad = nullptr;
      return e.post_send(qp.q.qp, &wr, &bad);
    });
    if (rc) sent = make_error(rc, "post_send failed");
  }
  if (sent) {
    say("receiving data transfers");
    auto wcs = qp.wait(o.count, o.count, o.timeout);
    if (!wcs) sent = wcs.error();
  }
  rdma::AddressHandle* h = *ah;
  (void)dp.call(qp.q.worker, [h](rdma::Engine& e) { return e.destroy_ah(h); });
  if (!sent) return sent.error();
  r.messages_sent = o.count;
  r.messages_received = o.count;
  say("data transfers complete");
  return r;
}

// rdma_client: its one 16-byte receive posted, connect, its one inline SEND (the 16-byte send
// buffer, untouched: zeros) and its completion, then the server's message, then DREQ.
Result<CmClientResult> run_rdma_client(dp::Dataplane& dp, CmService& cms, Qp& qp, const CmClientOptions& o,
                                       const std::function<void(const std::string&)>& say) {
  CmClientResult r;
  say("rdma_client: start");
  if (qp.post_recv(0, kRdmaClientMsg)) return make_error(EIO, "rdma_post_recv failed");
  // rdma_connect with no parameters: librdmacm's retry and RNR retry counts of 7.
  auto id = connect_rc(dp, cms, qp.q, o, 7, &r.selective_repeat);
  if (!id) return id.error();
  Status failed;
  if (qp.post_send(kRdmaClientMsg, kRdmaClientMsg, IBV_SEND_INLINE)) {
    failed = make_error(EIO, "rdma_post_send failed");
  } else if (auto got = qp.wait(1, 1, o.timeout); !got) {  // the SEND's completion and the server's message
    failed = got.error();
  } else {
    for (const ibv_wc& w : *got)
      if (w.opcode == IBV_WC_RECV && w.byte_len != kRdmaClientMsg)
        failed = make_error(EPROTO, "the server sent " + std::to_string(w.byte_len) + " bytes, not 16");
  }
  (void)cms.disconnect(*id);
  for (;;) {
    auto e = next_event(cms, *id, 3 * kSecond);
    if (!e || e->type == RdmaCmEventType::Disconnected) break;
  }
  if (!failed) return failed.error();
  r.messages_sent = r.messages_received = 1;
  say("rdma_client: end 0");
  return r;
}

}  // namespace

Status complete_cm_client_options(CmClientOptions& o) {
  const bool rping = o.tool == "rping", udaddy = o.tool == "udaddy";
  if (o.tool == "rdma_client") {
    // rdma_client has no -C or -S: one 16-byte message each way.
    if (o.port == 0) o.port = kCmatosePort;  // rdma_server's 7471 is cmatose's too
    o.count = 1;
    o.size = kRdmaClientMsg;
    return {};
  }
  if (!rping && !udaddy && o.tool != "ucmatose") return make_error(EINVAL, "unknown rdma_cm client '" + o.tool + "'");
  if (o.port == 0) o.port = rping || udaddy ? kRpingPort : kCmatosePort;  // udaddy's is 7174, in the UDP port space
  if (o.size == 0) o.size = rping ? 64 : 100;
  if (rping && (o.size < kRpingMinSize || o.size > kRpingMaxSize))
    return make_error(EINVAL, "rping -S must be " + std::to_string(kRpingMinSize) + ".." + std::to_string(kRpingMaxSize));
  if (o.count == 0 || o.count > 4096) return make_error(EINVAL, o.tool + ": -C must be 1..4096");
  if (!rping && o.size > 65536) return make_error(EINVAL, o.tool + ": -S must be 1..65536");
  if (udaddy && o.size > 4096) return make_error(EINVAL, "udaddy: -S above 4096 does not fit a UD datagram");
  return {};
}

Result<CmClientResult> run_cm_client(dp::Dataplane& dp, CmService& cms, Connector& conn, const CmClientOptions& opts,
                                     const std::function<void(const std::string&)>& say) {
  CmClientOptions o = opts;
  if (Status s = complete_cm_client_options(o); !s) return s.error();
  const bool rping = o.tool == "rping", udaddy = o.tool == "udaddy", rdma_client = o.tool == "rdma_client";
  const std::size_t bytes = rping    ? kData + 2 * std::size_t{o.size}
                            : udaddy ? std::size_t{o.count} * (o.size + 40) + o.size
                                     : std::size_t{o.count + 1} * o.size;
  auto buf = MappedBuffer::anonymous(bytes);
  if (!buf) return buf.error();
  auto mr = conn.register_memory(buf->data(), buf->size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
  if (!mr) return mr.error();
  QpParams p;
  if (udaddy) p.type = IBV_QPT_UD;
  p.send_depth = rping ? 16 : o.count + 4;
  p.recv_depth = rping ? 4 : o.count;
  if (rdma_client) p.max_inline = kRdmaClientMsg;  // rdma_client asks for 16 bytes inline
  auto q = conn.create(p);
  if (!q) {
    (void)dp.memory().deregister((*mr)->key);
    return q.error();
  }
  Qp qp{dp, *q, buf->data(), *mr};
  auto r = rping         ? run_rping(dp, cms, qp, o, say)
           : udaddy      ? run_udaddy(dp, cms, qp, o, say)
           : rdma_client ? run_rdma_client(dp, cms, qp, o, say)
                         : run_ucmatose(dp, cms, qp, o, say);
  (void)conn.destroy(*q);
  (void)dp.memory().deregister((*mr)->key);
  return r;
}

int cm_client_main(const std::string& tool, const dp::SplitArgs& split) {
  const std::string prog = "roce-gen " + tool;
  const auto fail = [&](const std::string& why, int code) {
    std::fprintf(stderr, "%s: %s\n", prog.c_str(), why.c_str());
    return code;
  };
  CmClientOptions o;
  o.tool = tool;
  std::string dev, ip, server;
  std::vector<std::string> vdevs;
  double timeout_s = 10;
  cxxopts::Options opts(prog, prog + ": the active side of librdmacm's " + tool + " over rdma_cm (IB CM on QP1)");
  opts.add_options()
      ("dev", "DPDK port (name or number)", cxxopts::value<std::string>(dev))
      ("vdev", "create a DPDK virtual device first (repeatable)", cxxopts::value<std::vector<std::string>>(vdevs))
      ("ip", "our IPv4 or IPv6 address on that port", cxxopts::value<std::string>(ip))
      ("a,server", "the server's IPv4 or IPv6 address (rping -a, ucmatose -s)", cxxopts::value<std::string>(server))
      ("s", "the server's address (ucmatose's and rdma_client's spelling)", cxxopts::value<std::string>())
      ("p,port", "the server's rdma_cm port (default: rping and udaddy 7174, ucmatose and rdma_client 7471)", cxxopts::value<std::uint16_t>(o.port)->default_value("0"))
      ("C,count", "rping: rounds; ucmatose: messages each way", cxxopts::value<std::uint32_t>(o.count)->default_value("10"))
      ("S,size", "rping: buffer bytes (23..65535, default 64); ucmatose: message bytes (default 100)", cxxopts::value<std::uint32_t>(o.size)->default_value("0"))
      ("V,verify", "rping: check each round's data")
      ("v,verbose", "rping: print each round's data")
      ("timeout", "seconds each step may take", cxxopts::value<double>(timeout_s)->default_value("10"))
      ("selective-repeat", kSelectiveRepeatHelp, cxxopts::value<std::uint32_t>(o.selective_repeat)->default_value(std::to_string(kDefaultSelectiveRepeatWindow)))
      ("h,help", "this text");
  std::vector<std::string> args{prog};
  args.insert(args.end(), split.app.begin() + std::min<std::size_t>(2, split.app.size()), split.app.end());
  auto parsed = parse_cli(opts, args);
  if (!parsed) return fail(parsed.error().message + " (try --help)", kExitUsage);
  const cxxopts::ParseResult& r = *parsed;
  if (r.count("help")) {
    std::cout << opts.help();
    return 0;
  }
  if (!r.unmatched().empty()) return fail("unexpected argument '" + r.unmatched().front() + "' (try --help)", kExitUsage);
  if (r.count("s")) server = r["s"].as<std::string>();
  if (tool == "rdma_client" && (r.count("count") || r.count("size") || r.count("verify")))
    return fail("rdma_client takes no -C, -S or -V: it sends one 16-byte message and receives one", 2);
  o.verify = r.count("verify") > 0;
  o.verbose = r.count("verbose") > 0;
  o.timeout = static_cast<Nanos>(timeout_s * 1e9);
  const auto me = parse_ip(ip);
  const auto peer = parse_ip(server);
  if (dev.empty()) return fail("--dev is required (try --help)", 2);
  if (!me) return fail("--ip is required: our IPv4 or IPv6 address (try --help)", 2);
  if (!peer) return fail("the server's address is required: -a ADDR (try --help)", 2);
  // rdma_cm resolves a route only within the source address's family.
  if (me->version != peer->version) return fail("--ip and the server's address must be of one family (both IPv4 or both IPv6)", 2);
  if (timeout_s <= 0) return fail("--timeout must be positive", 2);
  if (!valid_selective_repeat_window(o.selective_repeat))
    return fail("--selective-repeat takes 0 (go-back-N) or a power of two from 8 to 128, not " + std::to_string(o.selective_repeat), 2);
  o.server = *peer;
  if (Status s = complete_cm_client_options(o); !s) return fail(s.error().message, 2);

  ToolEal tool_eal;
  if (int rc = tool_eal.start(split.eal, vdevs, fail)) return rc;
  dp::DataplaneOptions dopt;
  dopt.name = "gen";
  dopt.port.name = dev;
  dopt.ip = *me;
  auto dpr = dp::Dataplane::create(dopt);
  if (!dpr) return fail(dpr.error().message, dpr.error().code == ENODEV ? 2 : 1);
  int rc = 0;
  {
    RunningDataplane running;
    if (Status s = running.start(**dpr); !s) return fail(s.error().message, 1);
    DriverSet drivers(**dpr);
    Connector conn(**dpr, static_cast<std::uint64_t>((*dpr)->now()) | 1);
    CmService cms(**dpr, drivers);
    auto res = run_cm_client(**dpr, cms, conn, o, [](const std::string& line) { std::printf("%s\n", line.c_str()); });
    if (res && tool != "udaddy") {  // UD has no retransmission to choose
      const std::string mode = res->selective_repeat ? "selective repeat (window " + std::to_string(res->selective_repeat) + ")"
                                                     : "go-back-N (the server did not agree to selective repeat)";
      std::fprintf(stderr, "%s: %s\n", tool.c_str(), mode.c_str());
    }
    if (!res) {
      rc = fail(res.error().message, 1);
    } else if (tool == "rping") {
      std::printf("rping: %llu rounds of %u bytes%s\n", static_cast<unsigned long long>(res->rounds), o.size,
                  o.verify ? ", every one verified" : "");
    } else {
      std::printf("%s: %llu messages received, %llu sent\n", tool.c_str(), static_cast<unsigned long long>(res->messages_received),
                  static_cast<unsigned long long>(res->messages_sent));
    }
    cms.stop();
  }
  dpr->reset();
  return rc;
}

}  // namespace roce::client
