#include "apps/inspect/analysis.hpp"

#include <algorithm>

#include "protocol/aeth.hpp"
#include "protocol/psn.hpp"

namespace roce::inspect {
namespace {

using proto::ExtHeader;
using proto::psn_diff;

constexpr std::size_t kNakPsnsKept = 8;

// Requests that carry their own sequence (a PSN going back is a retransmission): RC and DC.
// UC never retransmits and UD PSNs are per sender, not per flow.
bool reliable(const FrameView& f) { return f.dc || (f.opcode_kind == proto::OpcodeKind::Known && proto::opcode_info(f.bth.opcode).transport == proto::Transport::Rc); }

bool is_read_response(const FrameView& f) {
  if (f.dc) return proto::dc_opcode_info(f.bth.opcode, f.bth.se()).operation == proto::Operation::ReadResponse;
  const auto& info = proto::opcode_info(f.bth.opcode);
  return info.valid && info.operation == proto::Operation::ReadResponse;
}

// PSNs a request occupies: READs take one per response packet, unknown without the path MTU,
// so a READ counts as one here (its responses still pair by the first PSN).
bool expects_response(const FrameView& f) {
  const auto op = f.dc ? proto::dc_opcode_info(f.bth.opcode, f.bth.se()).operation : proto::opcode_info(f.bth.opcode).operation;
  return f.bth.ack_requested() || op == proto::Operation::ReadRequest || op == proto::Operation::CmpSwap ||
         op == proto::Operation::FetchAdd;
}

}  // namespace

std::size_t FlowKeyHash::operator()(const FlowKey& k) const noexcept {
  std::size_t h = k.qpn * 0x9E3779B97F4A7C15ull;
  for (std::size_t i = 0; i < 16; ++i) h = (h ^ k.src.bytes[i]) * 0x100000001B3ull ^ k.dst.bytes[i];
  return h;
}

void RttStats::add(std::int64_t ns) {
  if (samples == 0 || ns < min_ns) min_ns = ns;
  if (samples == 0 || ns > max_ns) max_ns = ns;
  ++samples;
  sum_ns += static_cast<double>(ns);
  if (kept.size() < kKept) kept.push_back(ns);
}

std::int64_t RttStats::median_ns() const {
  if (kept.empty()) return 0;
  std::vector<std::int64_t> v = kept;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

Flow& Analysis::flow_of(const FrameView& f) {
  const FlowKey key{f.ip_src, f.ip_dst, f.bth.dest_qp.get()};
  if (const auto it = by_key_.find(key); it != by_key_.end()) return *it->second;
  auto fl = std::make_unique<Flow>();
  fl->key = key;
  fl->transport = f.transport();
  fl->first_ns = f.ts_ns;
  Flow* p = fl.get();
  flows_.push_back(std::move(fl));
  by_key_.emplace(key, p);
  return *p;
}

void Analysis::add_point(Flow& fl, const FrameView& f, std::uint8_t kind) {
  if (!o_.keep_points) return;
  if (points_ >= o_.max_points) {
    points_truncated_ = true;
    return;
  }
  ++points_;
  fl.points.push_back(PsnPoint{f.ts_ns - first_ns_, psn_diff(f.bth.psn.get(), fl.first_psn), kind});
}

// Responses B -> (A, qp a) belong to the request flow A -> (B, *) whose PSNs they carry.
void Analysis::pair(Flow& responses, const FrameView& f) {
  const std::uint32_t psn = f.bth.psn.get();
  for (const auto& cand : flows_) {
    Flow& req = *cand;
    if (!req.is_request_flow || req.peer || !(req.key.src == responses.key.dst) || !(req.key.dst == responses.key.src) ||
        !req.seen_psn)
      continue;
    // A NAK carries the PSN the responder expected next: one past what it has seen.
    const std::int32_t upper = f.is_nak() ? 1 : 0;
    if (psn_diff(psn, req.first_psn) >= 0 && psn_diff(psn, req.max_psn) <= upper) {
      req.peer = &responses;
      responses.peer = &req;
      return;
    }
  }
}

void Analysis::on_request(Flow& fl, FrameView& f, bool counted) {
  fl.is_request_flow = true;
  if (counted) ++fl.requests;
  const std::uint32_t psn = f.bth.psn.get();
  const bool retransmission = f.flag(FrameFlag::Retransmission);
  if (!fl.seen_psn) {
    fl.seen_psn = true;
    fl.first_psn = fl.max_psn = psn;
  } else if (psn_diff(psn, fl.max_psn) > 0) {
    fl.max_psn = psn;
  }
  if (retransmission) {
    if (counted) {
      ++fl.retransmitted;
      if (f.flag(FrameFlag::Duplicate)) ++fl.duplicates;
      auto it = fl.retransmitted_psns.find(psn);
      if (it != fl.retransmitted_psns.end()) {
        ++it->second;
      } else {
        ++fl.retransmitted_distinct;
        if (fl.retransmitted_psns.size() < Flow::kMaxPsnsKept) fl.retransmitted_psns.emplace(psn, 1);
      }
    }
    for (std::size_t i = fl.pending_head; i < fl.pending.size(); ++i)
      if (fl.pending[i].psn == psn) fl.pending[i].ambiguous = true;
  } else if (counted && f.payload_len) {
    fl.goodput.add(f.ts_ns - first_ns_, *f.payload_len);
  }
  if (reliable(f) && expects_response(f) && !retransmission) {
    if (fl.pending.size() - fl.pending_head >= Flow::kMaxPending) ++fl.pending_head;
    fl.pending.push_back(Flow::Pending{psn, f.ts_ns, false});
    if (fl.pending_head > Flow::kMaxPending) {
      fl.pending.erase(fl.pending.begin(), fl.pending.begin() + static_cast<std::ptrdiff_t>(fl.pending_head));
      fl.pending_head = 0;
    }
  }
  if (reliable(f)) add_point(fl, f, retransmission ? PsnPoint::kRetransmission : PsnPoint::kNew);
}

void Analysis::on_response(Flow& fl, const FrameView& f, bool counted) {
  if (!fl.peer) pair(fl, f);
  if (counted) ++fl.responses;
  const std::uint32_t psn = f.bth.psn.get();
  Flow* req = fl.peer;
  const bool has_aeth = f.has(ExtHeader::Aeth);
  const proto::Syndrome syn{has_aeth ? f.ext.aeth.syndrome : std::uint8_t{0}};
  const bool read_response = is_read_response(f);

  if (read_response) {
    bool fresh = true;
    if (!fl.resp_seen) {
      fl.resp_seen = true;
      fl.resp_max = psn;
    } else if (psn_diff(psn, fl.resp_max) <= 0) {
      fresh = false;
      if (counted) ++fl.retransmitted;
    } else {
      fl.resp_max = psn;
    }
    if (fresh && counted && f.payload_len) fl.goodput.add(f.ts_ns - first_ns_, *f.payload_len);
  }
  if (has_aeth && (syn.is_nak() || syn.is_rnr_nak())) {
    if (counted) {
      ++fl.naks[syn.raw];
      auto& v = fl.nak_psns[syn.raw];
      if (v.size() < kNakPsnsKept) v.push_back(psn);
    }
    if (req) {
      add_point(*req, f, PsnPoint::kNak);
      // A NAK acknowledges everything before the PSN it names.
      const std::uint32_t before = proto::psn_add(psn, -1);
      if (!req->acked_any || psn_diff(before, req->acked_psn) > 0) req->acked_psn = before;
      req->acked_any = true;
    }
    return;
  }
  const bool acknowledges = (has_aeth && syn.is_ack()) || read_response;
  if (!acknowledges) return;
  if (has_aeth && syn.is_ack() && !read_response) {
    if (counted) ++fl.acks;
    if (fl.last_ack_valid) {
      const std::int32_t advance = psn_diff(psn, fl.last_ack_psn);
      if (counted && advance > 0) {
        fl.packets_acked += static_cast<std::uint64_t>(advance);
        if (advance > 1) ++fl.coalesced_acks;
      }
    } else if (req && counted) {
      const std::int32_t advance = psn_diff(psn, req->first_psn) + 1;
      if (advance > 0) {
        fl.packets_acked += static_cast<std::uint64_t>(advance);
        if (advance > 1) ++fl.coalesced_acks;
      }
    }
    if (!fl.last_ack_valid || psn_diff(psn, fl.last_ack_psn) > 0) fl.last_ack_psn = psn;
    fl.last_ack_valid = true;
  }
  if (!req) return;
  if (!req->acked_any || psn_diff(psn, req->acked_psn) > 0) req->acked_psn = psn;
  req->acked_any = true;
  // The responses answer every pending request up to their PSN; the one with exactly that PSN
  // gives an RTT sample unless it was retransmitted.
  while (req->pending_head < req->pending.size() && psn_diff(req->pending[req->pending_head].psn, psn) <= 0) {
    const Flow::Pending& p = req->pending[req->pending_head++];
    if (p.psn == psn && !p.ambiguous && counted) req->rtt.add(f.ts_ns - p.t_ns);
  }
}

Flow* Analysis::classify(FrameView& f) {
  if (!any_) {
    any_ = true;
    first_ns_ = f.ts_ns;
  }
  last_ns_ = std::max(last_ns_, f.ts_ns);
  if (!f.has_bth || !f.has_ip || f.error != proto::ParseError::None) return nullptr;
  Flow& fl = flow_of(f);
  if (f.is_request() && reliable(f) && fl.seen_psn) {
    const std::uint32_t psn = f.bth.psn.get();
    if (psn_diff(psn, fl.max_psn) <= 0) {
      f.set(FrameFlag::Retransmission);
      if (fl.acked_any && psn_diff(psn, fl.acked_psn) <= 0) f.set(FrameFlag::Duplicate);
    }
  }
  return &fl;
}

void Analysis::account(Flow& fl, FrameView& f, bool counted) {
  if (counted) {
    ++fl.frames;
    fl.bytes += f.wire_len;
    if (f.payload_len) fl.payload_bytes += *f.payload_len;
    fl.last_ns = f.ts_ns;
    if (f.is_ce()) ++fl.ce;
  }
  if (f.is_cnp()) {
    if (counted) ++fl.cnps;
    return;
  }
  if (f.opcode_kind != proto::OpcodeKind::Known && f.opcode_kind != proto::OpcodeKind::Dc) return;
  if (f.is_request()) on_request(fl, f, counted);
  else on_response(fl, f, counted);
}

}  // namespace roce::inspect
