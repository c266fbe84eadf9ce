#include "apps/replay/derive.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "apps/replay/text_values.hpp"
#include "lib/rdma/qp_context.hpp"
#include "protocol/aeth.hpp"
#include "protocol/mtu.hpp"
#include "protocol/parser.hpp"
#include "protocol/psn.hpp"

namespace roce::replay {

using namespace roce::proto;

namespace {

constexpr std::uint64_t kMaxDerivedRegion = 1ull << 30;
constexpr std::uint8_t kDerivedRdAtomic = 16;

struct Seen {
  const Frame* frame;
  Packet pkt;
};

struct Request {
  const Seen* seen;
  std::uint32_t npackets;  // PSNs it takes
};

struct OurQp {
  std::uint32_t qpn = 0;
  const Seen* first = nullptr;
  std::vector<Request> requests;
  std::vector<const Seen*> responses;
  std::optional<std::uint32_t> peer_qpn;
  std::uint32_t recv_count = 0;
  std::uint64_t recv_size = 0;
};

IpAddress src_of(const Packet& p) {
  return p.ip_version == IpVersion::V4 ? IpAddress::ipv4(p.ipv4.src) : IpAddress::ipv6(p.ipv6.src);
}
IpAddress dst_of(const Packet& p) {
  return p.ip_version == IpVersion::V4 ? IpAddress::ipv4(p.ipv4.dst) : IpAddress::ipv6(p.ipv6.dst);
}

bool is_rc(const Packet& p) { return p.info->transport == Transport::Rc; }

// Memory one R_Key covers, with the bytes the capture reveals.
struct RegionSketch {
  std::uint64_t lo = UINT64_MAX;
  std::uint64_t hi = 0;
  std::map<std::uint64_t, std::byte> known;  // address -> first value seen
  void cover(std::uint64_t va, std::uint64_t len) {
    lo = std::min(lo, va);
    hi = std::max(hi, va + std::max<std::uint64_t>(len, 1));
  }
  void learn(std::uint64_t va, ByteSpan data) {
    for (std::size_t i = 0; i < data.size(); ++i) known.emplace(va + i, data[i]);
  }
};

class Deriver {
 public:
  Deriver(const std::vector<Frame>& capture, const DeriveOptions& o, const std::string& source)
      : capture_(capture), o_(o), source_(source) {}

  Result<Derived> run() {
    decode();
    if (Status st = pick_responder(); !st) return st.error();
    collect();
    if (qps_.empty()) return make_error(EINVAL, source_ + ": no RC request to " + to_string(responder_) + " with a good ICRC");
    pick_mtu();
    match_responses();
    if (Status st = sketch_memory(); !st) return st.error();
    count_receives();
    build();
    return std::move(out_);
  }

 private:
  void decode() {
    seen_.reserve(capture_.size());
    for (const Frame& f : capture_) {
      Seen s{&f, {}};
      if (parse_frame(f.bytes, ParseOptions{}, s.pkt) != ParseError::None || s.pkt.icrc_status != IcrcStatus::Ok ||
          !is_rc(s.pkt))
        continue;
      seen_.push_back(s);
    }
  }

  Status pick_responder() {
    if (o_.responder_ip) {
      responder_ = *o_.responder_ip;
      return {};
    }
    for (const Seen& s : seen_)
      if (s.pkt.info->is_request) {
        responder_ = dst_of(s.pkt);
        return {};
      }
    return make_error(EINVAL, source_ + ": no RC request with a good ICRC to stand in for its responder");
  }

  void collect() {
    for (const Seen& s : seen_) {
      if (!s.pkt.info->is_request || !(dst_of(s.pkt) == responder_)) continue;
      OurQp& q = qps_[s.pkt.dest_qp()];
      if (!q.first) {
        q.qpn = s.pkt.dest_qp();
        q.first = &s;
      }
      q.requests.push_back(Request{&s, 1});
    }
  }

  // FIRST and MIDDLE packets carry exactly the path MTU; without any, the smallest MTU that
  // holds every single packet (at least 1024, what 1500-byte Ethernet gives).
  void pick_mtu() {
    std::uint32_t exact = 0, largest = 0;
    for (const Seen& s : seen_) {
      if (s.pkt.info->payload == PayloadRule::ExactPmtu) exact = std::max(exact, s.pkt.payload_length);
      largest = std::max(largest, s.pkt.payload_length);
    }
    if (exact && mtu_from_bytes(exact)) {
      pmtu_ = exact;
    } else {
      pmtu_ = 1024;
      while (pmtu_ < largest && pmtu_ < 4096) pmtu_ *= 2;
    }
    for (auto& [qpn, q] : qps_)
      for (Request& r : q.requests)
        if (r.seen->pkt.info->operation == Operation::ReadRequest)
          r.npackets = packets_for(r.seen->pkt.ext.reth.dma_length.get(), pmtu_);
    out_.notes.push_back("path MTU " + std::to_string(pmtu_) + (exact ? " (from FIRST/MIDDLE packets)" : " (no FIRST/MIDDLE packet; smallest that fits)"));
  }

  // A response belongs to the QP that received a request whose PSNs it carries; its
  // destination QP is that QP's peer.
  void match_responses() {
    for (const Seen& s : seen_) {
      if (s.pkt.info->is_request || !(src_of(s.pkt) == responder_)) continue;
      const IpAddress to = dst_of(s.pkt);
      for (auto& [qpn, q] : qps_) {
        if (!(src_of(q.first->pkt) == to) || (q.peer_qpn && *q.peer_qpn != s.pkt.dest_qp())) continue;
        const bool answers = std::any_of(q.requests.begin(), q.requests.end(), [&](const Request& r) {
          const std::int32_t d = psn_diff(s.pkt.psn(), r.seen->pkt.psn());
          return d >= 0 && d < static_cast<std::int32_t>(r.npackets);
        });
        if (!answers) continue;
        q.peer_qpn = s.pkt.dest_qp();
        q.responses.push_back(&s);
        out_.expected.push_back(*s.frame);
        break;
      }
    }
  }

  Status sketch_memory() {
    for (auto& [qpn, q] : qps_) {
      for (const Request& r : q.requests) {
        const Packet& p = r.seen->pkt;
        const OpcodeInfo& info = *p.info;
        if (info.has(ExtHeader::Reth)) regions_[p.ext.reth.rkey.get()].cover(p.ext.reth.va.get(), p.ext.reth.dma_length.get());
        if (info.has(ExtHeader::AtomicEth)) regions_[p.ext.atomic.rkey.get()].cover(p.ext.atomic.va.get(), 8);
        learn_from_responses(q, r);
      }
    }
    for (const auto& [rkey, g] : regions_)
      if (g.hi - g.lo > kMaxDerivedRegion)
        return make_error(EINVAL, source_ + ": R_Key " + format_hex(rkey) + " spans " + std::to_string(g.hi - g.lo) +
                                      " bytes, more than a derived region may");
    return {};
  }

  // The data the real responder returned is what its memory held: READ responses give the
  // bytes at the READ's address, an atomic ACK the word before the operation (stored in the
  // responder host's order, taken as little-endian).
  void learn_from_responses(const OurQp& q, const Request& r) {
    const Packet& req = r.seen->pkt;
    if (req.info->operation == Operation::ReadRequest) {
      RegionSketch& g = regions_[req.ext.reth.rkey.get()];
      for (const Seen* s : q.responses) {
        if (s->pkt.info->operation != Operation::ReadResponse) continue;
        const std::int32_t d = psn_diff(s->pkt.psn(), req.psn());
        if (d < 0 || d >= static_cast<std::int32_t>(r.npackets)) continue;
        g.learn(req.ext.reth.va.get() + std::uint64_t(d) * pmtu_, s->pkt.payload);
      }
    } else if (req.info->has(ExtHeader::AtomicEth)) {
      for (const Seen* s : q.responses) {
        if (s->pkt.info->operation != Operation::AtomicAck || s->pkt.psn() != req.psn()) continue;
        std::uint64_t v = s->pkt.ext.atomic_ack.original_data.get();
        std::byte b[8];
        std::memcpy(b, &v, 8);
        regions_[req.ext.atomic.rkey.get()].learn(req.ext.atomic.va.get(), ByteSpan(b, 8));
        break;
      }
    }
  }

  // One receive per SEND message (and WRITE with immediate), each as large as the largest SEND.
  void count_receives() {
    for (auto& [qpn, q] : qps_) {
      std::uint64_t msg = 0;
      for (const Request& r : q.requests) {
        const OpcodeInfo& info = *r.seen->pkt.info;
        if (info.operation == Operation::Send) {
          if (info.starts_message()) {
            ++q.recv_count;
            msg = 0;
          }
          msg += r.seen->pkt.payload_length;
          q.recv_size = std::max(q.recv_size, msg);
        } else if (info.operation == Operation::Write && info.has_immediate()) {
          ++q.recv_count;
        }
      }
    }
  }

  void build() {
    Scenario& s = out_.scenario;
    s.source = source_ + " (derived)";
    s.start = capture_.empty() ? 0 : capture_.front().ts;
    s.local.ip = responder_;
    s.compare.timing = false;
    // How often a responder ACKs is its own choice (rxe: each AckReq; the Huawei NIC also
    // unrequested ones): an ACK the other side folds into a later one is not a difference.
    s.compare.coalesce_acks = true;
    bool real_credits = false;
    for (auto& [qpn, q] : qps_) {
      const Packet& first = q.first->pkt;
      s.local.mac = first.eth.dst;
      QpSpec spec;
      spec.name = "q" + format_hex(qpn).substr(2);
      spec.qpn = qpn;
      spec.rts = false;
      spec.peer_qpn = q.peer_qpn.value_or(0);
      spec.peer_ip = src_of(first);
      spec.peer_mac = first.eth.src;
      spec.rq_psn = first.psn();
      spec.mtu = pmtu_;
      spec.max_dest_rd_atomic = kDerivedRdAtomic;
      s.qps.push_back(spec);
      if (q.recv_count) s.recvs.push_back(RecvSpec{spec.name, q.recv_count, static_cast<std::uint32_t>(std::max<std::uint64_t>(q.recv_size, 1)), 0, 0});
      for (const Seen* r : q.responses)
        if (r->pkt.info->has(ExtHeader::Aeth) && Syndrome{r->pkt.ext.aeth.syndrome}.is_ack() &&
            Syndrome{r->pkt.ext.aeth.syndrome}.value() != kCreditInvalid)
          real_credits = true;
      out_.notes.push_back("QP " + format_hex(qpn, 6) + " on " + to_string(responder_) + ": " +
                           std::to_string(q.requests.size()) + " requests from " + to_string(spec.peer_ip) + ", first PSN " +
                           format_hex(spec.rq_psn, 6) + ", peer QP " +
                           (q.peer_qpn ? format_hex(*q.peer_qpn, 6) : std::string("unknown (no response)")) + ", " +
                           std::to_string(q.responses.size()) + " responses to compare, " + std::to_string(q.recv_count) +
                           " receives of " + std::to_string(q.recv_size) + " B");
    }
    // rxe sends credit code 0x1F (no end-to-end credits) as we do; hardware counts real credits.
    s.compare.credits = !real_credits;
    if (real_credits) out_.notes.push_back("ACK credit codes not compared: the real responder sends real credit counts, we send 0x1F");
    for (const auto& [rkey, g] : regions_) {
      MrSpec m;
      m.name = "rkey_" + format_hex(rkey).substr(2);
      m.rkey = rkey;
      m.va = g.lo;
      m.size = g.hi - g.lo;
      // Runs of known bytes, as (offset, data) pairs.
      for (auto it = g.known.begin(); it != g.known.end();) {
        std::vector<std::byte> run{it->second};
        const std::uint64_t at = it->first;
        auto next = std::next(it);
        while (next != g.known.end() && next->first == at + run.size()) run.push_back((next++)->second);
        m.bytes.emplace_back(at - g.lo, std::move(run));
        it = next;
      }
      out_.notes.push_back("region for R_Key " + format_hex(rkey) + ": " + std::to_string(m.size) + " B at " +
                           format_hex(m.va) + ", " + std::to_string(g.known.size()) + " B known from responses");
      s.mrs.push_back(std::move(m));
    }
  }

  const std::vector<Frame>& capture_;
  const DeriveOptions& o_;
  const std::string& source_;
  std::vector<Seen> seen_;
  IpAddress responder_{};
  std::map<std::uint32_t, OurQp> qps_;
  std::map<std::uint32_t, RegionSketch> regions_;
  std::uint32_t pmtu_ = 1024;
  Derived out_;
};

}  // namespace

Result<Derived> derive_scenario(const std::vector<Frame>& capture, const DeriveOptions& o, const std::string& source) {
  return Deriver(capture, o, source).run();
}

}  // namespace roce::replay
