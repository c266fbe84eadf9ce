#include "apps/replay/derive.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

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
constexpr std::uint32_t kGsiQp = 1;          // management datagrams: not the engine's to answer
constexpr std::uint32_t kUdGrhBytes = 40;    // a UD receive buffer holds the GRH before the payload

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
  Transport transport = Transport::Rc;
  const Seen* first = nullptr;          // the first request fed: it starts a message
  std::vector<const Seen*> lead;        // requests before it (the end of a message joined halfway)
  std::vector<Request> requests;
  std::vector<const Seen*> responses;
  std::optional<std::uint32_t> peer_qpn;
  std::uint32_t recv_count = 0;
  std::uint64_t recv_size = 0;
  std::uint32_t completions = 0;        // receive completions the requests make (UC and UD checks)
  std::uint32_t qkey = 0;
};

rdma::IpAddress src_of(const Packet& p) {
  return p.ip_version == IpVersion::V4 ? rdma::IpAddress::ipv4(p.ipv4.src) : rdma::IpAddress::ipv6(p.ipv6.src);
}
rdma::IpAddress dst_of(const Packet& p) {
  return p.ip_version == IpVersion::V4 ? rdma::IpAddress::ipv4(p.ipv4.dst) : rdma::IpAddress::ipv6(p.ipv6.dst);
}

bool replayable(const Packet& p) {
  const Transport t = p.info->transport;
  if (t == Transport::Ud) return p.dest_qp() != kGsiQp;
  return t == Transport::Rc || t == Transport::Uc;
}

ibv_qp_type qp_type(Transport t) { return t == Transport::Uc ? IBV_QPT_UC : t == Transport::Ud ? IBV_QPT_UD : IBV_QPT_RC; }

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
    if (qps_.empty())
      return make_error(EINVAL, source_ + ": no RC, UC or UD request to " + to_string(responder_) +
                                    " with a good ICRC (try --responder with the other host)");
    pick_mtu();
    match_responses();
    if (Status st = sketch_memory(); !st) return st.error();
    count_receives();
    find_gaps();
    build();
    return std::move(out_);
  }

 private:
  void decode() {
    seen_.reserve(capture_.size());
    for (const Frame& f : capture_) {
      Seen s{&f, {}};
      if (parse_frame(f.bytes, ParseOptions{}, s.pkt) != ParseError::None || s.pkt.icrc_status != IcrcStatus::Ok ||
          !replayable(s.pkt))
        continue;
      seen_.push_back(s);
    }
  }

  Status pick_responder() {
    if (o_.responder_ip) {
      responder_ = *o_.responder_ip;
      return {};
    }
    bool responses = false;
    for (const Seen& s : seen_) {
      if (s.pkt.info->is_request) {
        responder_ = dst_of(s.pkt);
        return {};
      }
      responses = true;
    }
    return make_error(EINVAL, source_ + ": no RC, UC or UD request with a good ICRC to stand in for its responder" +
                                  (responses ? std::string(" (it holds only responses: give a capture that begins before the requests do)")
                                             : std::string(" (roce-inspect FILE --summary shows what it holds)")));
  }

  // A QP's requests are fed from the first one that starts a message: a capture that joins a
  // message halfway holds packets its responder took in before the capture began.
  void collect() {
    for (const Seen& s : seen_) {
      if (!s.pkt.info->is_request || !(dst_of(s.pkt) == responder_)) continue;
      OurQp& q = qps_[s.pkt.dest_qp()];
      if (!q.first) {
        q.qpn = s.pkt.dest_qp();
        q.transport = s.pkt.info->transport;
        if (!s.pkt.info->starts_message()) {
          q.lead.push_back(&s);
          continue;
        }
        q.first = &s;
      }
      q.requests.push_back(Request{&s, 1});
      if (q.transport == Transport::Ud) q.qkey = s.pkt.ext.deth.qkey.get();
    }
    std::erase_if(qps_, [this](const auto& kv) {
      if (kv.second.first) return false;
      out_.notes.push_back("QP " + format_hex(kv.first, 6) + ": " + std::to_string(kv.second.lead.size()) +
                           " requests, none starting a message: not replayed");
      for (const Seen* s : kv.second.lead) out_.skipped_frames.push_back(s->frame->index);
      return true;
    });
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
          r.npackets = rdma::packets_for(r.seen->pkt.ext.reth.dma_length.get(), pmtu_);
    out_.notes.push_back("path MTU " + std::to_string(pmtu_) + (exact ? " (from FIRST/MIDDLE packets)" : " (no FIRST/MIDDLE packet; smallest that fits)"));
  }

  // A response belongs to the RC QP that received a request whose PSNs it carries; its
  // destination QP is that QP's peer. Responses to the requests left out are left out too.
  void match_responses() {
    for (const Seen& s : seen_) {
      if (s.pkt.info->is_request || !(src_of(s.pkt) == responder_)) continue;
      const rdma::IpAddress to = dst_of(s.pkt);
      for (auto& [qpn, q] : qps_) {
        if (q.transport != Transport::Rc || !(src_of(q.first->pkt) == to) || (q.peer_qpn && *q.peer_qpn != s.pkt.dest_qp()))
          continue;
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

  // One receive per SEND message (and WRITE with immediate), each as large as the largest
  // SEND (plus the GRH on UD). A message counts as a completion when all its packets are here.
  void count_receives() {
    for (auto& [qpn, q] : qps_) {
      std::uint64_t msg = 0;
      bool whole = true;
      std::optional<std::uint32_t> next;
      for (const Request& r : q.requests) {
        const OpcodeInfo& info = *r.seen->pkt.info;
        const std::uint32_t psn = r.seen->pkt.psn();
        if (info.starts_message()) whole = true;
        else if (next && psn != *next) whole = false;
        next = psn_add(psn, r.npackets);
        if (info.operation == Operation::Send) {
          if (info.starts_message()) {
            ++q.recv_count;
            msg = 0;
          }
          msg += r.seen->pkt.payload_length;
          q.recv_size = std::max(q.recv_size, msg + (q.transport == Transport::Ud ? kUdGrhBytes : 0));
          if (info.ends_message() && whole) ++q.completions;
        } else if (info.operation == Operation::Write && info.has_immediate()) {
          if (info.starts_message()) ++q.recv_count;
          if (info.ends_message() && whole) ++q.completions;
        }
      }
    }
  }

  // Request PSNs the capture skips. For RC the real responder's answers tell whether it got
  // them: an answer past the gap (and no sequence NAK at its start) means the sniffer, not
  // the network, lost them.
  void find_gaps() {
    for (auto& [qpn, q] : qps_) {
      if (q.transport == Transport::Ud) continue;
      std::optional<std::uint32_t> next;
      std::uint64_t last_frame = 0;
      for (const Request& r : q.requests) {
        const std::uint32_t psn = r.seen->pkt.psn();
        if (next && psn_after(psn, *next)) {
          CaptureGap g;
          g.qpn = qpn;
          g.answers_to = q.peer_qpn.value_or(0);
          g.first = *next;
          g.last = psn_add(psn, -1);
          g.after_frame = last_frame;
          if (q.transport == Transport::Rc && !responder_missed(q, g, g.acked_past)) out_.gaps.push_back(g);
          else if (q.transport == Transport::Uc)
            out_.notes.push_back("QP " + format_hex(qpn, 6) + ": PSNs " + format_hex(g.first, 6) + ".." + format_hex(g.last, 6) +
                                 " are missing after frame " + std::to_string(g.after_frame) +
                                 "; UC sends no answer to tell whether the sniffer or the network lost them");
        }
        if (!next || psn_diff(psn_add(psn, r.npackets), *next) > 0) next = psn_add(psn, r.npackets);
        last_frame = r.seen->frame->index;
      }
    }
  }

  // The real responder asked for the gap's first PSN again (it missed the packets too: the
  // network lost them, and our engine will NAK as it did). Sets `acked_past` when one of its
  // answers acknowledges beyond the gap.
  bool responder_missed(const OurQp& q, const CaptureGap& g, bool& acked_past) const {
    acked_past = false;
    for (const Seen* s : q.responses) {
      const Syndrome syn{s->pkt.info->has(ExtHeader::Aeth) ? s->pkt.ext.aeth.syndrome : std::uint8_t{0}};
      if (syn.is_nak() && s->pkt.psn() == g.first) return true;
      if (psn_diff(s->pkt.psn(), g.last) >= 0 && !syn.is_nak() && !syn.is_rnr_nak()) acked_past = true;
    }
    return false;
  }

  // Our MSN for the first of the real responder's responses that carries one: the messages the
  // requests fed to us complete up to its PSN (before it, for a NAK). The difference to the
  // real one is how many messages the connection had completed when the capture began.
  std::optional<std::uint32_t> msn_offset(const OurQp& q) const {
    for (const Seen* s : q.responses) {
      if (!s->pkt.info->has(ExtHeader::Aeth)) continue;
      const Syndrome syn{s->pkt.ext.aeth.syndrome};
      const bool before_only = syn.is_nak() || syn.is_rnr_nak();
      std::set<std::uint32_t> done;
      for (const Request& r : q.requests) {
        const Packet& p = r.seen->pkt;
        if (!p.info->ends_message()) continue;
        const std::int32_t d = psn_diff(p.psn(), s->pkt.psn());
        if (d < 0 || (d == 0 && !before_only)) done.insert(p.psn());
      }
      return (s->pkt.ext.aeth.msn.get() - static_cast<std::uint32_t>(done.size())) & kPsnMask;
    }
    return std::nullopt;
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
    bool real_credits = false, silent = false;
    std::uint64_t completions = 0;
    for (auto& [qpn, q] : qps_) {
      const Packet& first = q.first->pkt;
      s.local.mac = first.eth.dst;
      QpSpec spec;
      spec.name = "q" + format_hex(qpn).substr(2);
      spec.type = qp_type(q.transport);
      spec.qpn = qpn;
      spec.rts = false;
      spec.peer_qpn = q.peer_qpn.value_or(0);
      spec.peer_ip = src_of(first);
      spec.peer_mac = first.eth.src;
      spec.rq_psn = first.psn();
      spec.mtu = pmtu_;
      spec.max_dest_rd_atomic = kDerivedRdAtomic;
      spec.qkey = q.qkey;
      s.qps.push_back(spec);
      if (q.recv_count) s.recvs.push_back(RecvSpec{spec.name, q.recv_count, static_cast<std::uint32_t>(std::max<std::uint64_t>(q.recv_size, 1)), 0, 0});
      completions += q.completions;
      silent |= q.transport != Transport::Rc;
      for (const Seen* r : q.responses)
        if (r->pkt.info->has(ExtHeader::Aeth) && Syndrome{r->pkt.ext.aeth.syndrome}.is_ack() &&
            Syndrome{r->pkt.ext.aeth.syndrome}.value() != kCreditInvalid)
          real_credits = true;
      std::string line = "QP " + format_hex(qpn, 6) + " (" + to_string(q.transport) + ") on " + to_string(responder_) + ": " +
                         std::to_string(q.requests.size()) + " requests from " + to_string(spec.peer_ip) + ", first PSN " +
                         format_hex(spec.rq_psn, 6);
      if (q.transport == Transport::Rc)
        line += ", peer QP " + (q.peer_qpn ? format_hex(*q.peer_qpn, 6) : std::string("unknown (no response)")) + ", " +
                std::to_string(q.responses.size()) + " responses to compare";
      else
        line += ", " + std::to_string(q.completions) + " receive completions to check (" + to_string(q.transport) + " sends no answers)";
      if (q.transport == Transport::Ud) line += ", Q_Key " + format_hex(q.qkey, 8);
      line += ", " + std::to_string(q.recv_count) + " receives of " + std::to_string(q.recv_size) + " B";
      out_.notes.push_back(line);
      if (!q.lead.empty()) {
        out_.notes.push_back("QP " + format_hex(qpn, 6) + ": the capture joins a message halfway: " + std::to_string(q.lead.size()) +
                             " requests before PSN " + format_hex(spec.rq_psn, 6) + " (frames " +
                             std::to_string(q.lead.front()->frame->index) + ".." + std::to_string(q.lead.back()->frame->index) +
                             ") are not fed; the PSN base is the first message start");
        for (const Seen* l : q.lead) out_.skipped_frames.push_back(l->frame->index);
      }
      if (q.peer_qpn) {
        if (const auto off = msn_offset(q); off && *off != 0) {
          s.compare.msn_offset[*q.peer_qpn] = *off;
          out_.notes.push_back("QP " + format_hex(qpn, 6) + ": the capture starts mid-connection: the real responder had completed " +
                               std::to_string(*off) + " messages before it (its first MSN says so); MSNs are compared as ours + " +
                               std::to_string(*off));
        }
      }
    }
    std::map<std::uint32_t, std::size_t> gaps_per_qp;
    for (const CaptureGap& g : out_.gaps) ++gaps_per_qp[g.qpn];
    for (const auto& [gap_qpn, n] : gaps_per_qp) {
      const std::uint32_t qpn = gap_qpn;  // clang 14 cannot capture a structured binding
      const CaptureGap& g = *std::find_if(out_.gaps.begin(), out_.gaps.end(), [qpn](const CaptureGap& x) { return x.qpn == qpn; });
      out_.notes.push_back("QP " + format_hex(qpn, 6) + ": " + std::to_string(n) + " gap" + (n == 1 ? "" : "s") +
                           " in the request PSNs the real responder did not NAK, the first " + format_hex(g.first, 6) + ".." +
                           format_hex(g.last, 6) + " after frame " + std::to_string(g.after_frame) +
                           ": the sniffer dropped them, and differences from there on are its");
    }
    if (std::all_of(qps_.begin(), qps_.end(), [](const auto& kv) { return kv.second.transport == Transport::Rc && kv.second.responses.empty(); }))
      out_.notes.push_back("no answer of " + to_string(responder_) +
                           " to these requests is in the capture: nothing to compare ours with (--responder picks the other host)");
    // UC and UD answer nothing: what they did is in the completions of the receives.
    if (silent) {
      s.expect.emplace_back("wc.ok", completions);
      s.expect.emplace_back("wc.error", 0);
      out_.notes.push_back("expecting " + std::to_string(completions) + " receive completions and no error completion");
    }
    std::sort(out_.skipped_frames.begin(), out_.skipped_frames.end());
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
  rdma::IpAddress responder_{};
  std::map<std::uint32_t, OurQp> qps_;
  std::map<std::uint32_t, RegionSketch> regions_;
  std::uint32_t pmtu_ = 1024;
  Derived out_;
};

}  // namespace

Result<Derived> derive_scenario(const std::vector<Frame>& capture, const DeriveOptions& o, const std::string& source) {
  return Deriver(capture, o, source).run();
}

std::vector<Frame> without_frames(const std::vector<Frame>& capture, const std::vector<std::uint64_t>& skipped) {
  std::vector<Frame> out;
  out.reserve(capture.size());
  for (const Frame& f : capture)
    if (!std::binary_search(skipped.begin(), skipped.end(), f.index)) out.push_back(f);
  return out;
}

}  // namespace roce::replay
