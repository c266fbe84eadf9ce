#include "apps/replay/compare.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "capture/frame_decoder.hpp"
#include "apps/replay/text_values.hpp"
#include "protocol/aeth.hpp"
#include "protocol/parser.hpp"
#include "protocol/psn.hpp"

namespace roce::replay {

using namespace roce::proto;

namespace {

enum class FlowKind : std::uint8_t { Requests, Responses, Cnps, Malformed };

struct Decoded {
  const Frame* frame = nullptr;
  Packet pkt;
  ParseError error = ParseError::None;
};

using FlowKey = std::pair<std::uint32_t, FlowKind>;

FlowKind kind_of(const Decoded& d) {
  if (d.error != ParseError::None) return FlowKind::Malformed;
  if (d.pkt.info->transport == Transport::Cnp) return FlowKind::Cnps;
  return d.pkt.info->is_request ? FlowKind::Requests : FlowKind::Responses;
}

std::string flow_name(const FlowKey& k) {
  switch (k.second) {
    case FlowKind::Requests: return "requests to QP " + format_hex(k.first, 6);
    case FlowKind::Responses: return "responses to QP " + format_hex(k.first, 6);
    case FlowKind::Cnps: return "CNPs to QP " + format_hex(k.first, 6);
    case FlowKind::Malformed: return "malformed RoCEv2 frames";
  }
  return "unknown";
}

struct Side {
  std::vector<Decoded> frames;
  std::size_t ignored = 0;
  std::map<FlowKey, std::vector<const Decoded*>> flows;
  std::vector<FlowKey> order;  // flows by first appearance
};

void decode(const std::vector<Frame>& in, CrcBackend crc, Side& side) {
  side.frames.reserve(in.size());
  for (const Frame& f : in) {
    Decoded d;
    d.frame = &f;
    d.error = parse_frame(f.bytes, ParseOptions{crc, true, 0, false}, d.pkt);
    const capture::Verdict v = capture::verdict_of(d.error);
    if (v == capture::Verdict::NotRoce || v == capture::Verdict::RoceV1) {
      ++side.ignored;
      continue;
    }
    side.frames.push_back(d);
  }
  for (const Decoded& d : side.frames) {
    const FlowKey k{d.error == ParseError::None ? d.pkt.dest_qp() : 0, kind_of(d)};
    auto& flow = side.flows[k];
    if (flow.empty()) side.order.push_back(k);
    flow.push_back(&d);
  }
}

bool is_plain_ack(const Decoded& d) {
  return d.error == ParseError::None && d.pkt.opcode() == raw(Opcode::RcAck) && Syndrome{d.pkt.ext.aeth.syndrome}.is_ack();
}

// Pairs up the frames of one flow. With coalescing allowed, a plain ACK on either side that
// the other side's next response covers (its PSN is earlier) is passed over: the responder
// chose to acknowledge more often, which the spec leaves to it.
std::vector<std::pair<const Decoded*, const Decoded*>> align(const std::vector<const Decoded*>& e,
                                                             const std::vector<const Decoded*>& g, bool coalesce,
                                                             std::size_t& passed_over) {
  std::vector<std::pair<const Decoded*, const Decoded*>> out;
  std::size_t i = 0, j = 0;
  while (i < e.size() || j < g.size()) {
    if (i < e.size() && j < g.size()) {
      if (coalesce && e[i]->error == ParseError::None && g[j]->error == ParseError::None) {
        if (is_plain_ack(*e[i]) && psn_before(e[i]->pkt.psn(), g[j]->pkt.psn())) {
          ++passed_over;
          ++i;
          continue;
        }
        if (is_plain_ack(*g[j]) && psn_before(g[j]->pkt.psn(), e[i]->pkt.psn())) {
          ++passed_over;
          ++j;
          continue;
        }
      }
      out.emplace_back(e[i++], g[j++]);
    } else if (i < e.size()) {
      out.emplace_back(e[i++], nullptr);
    } else {
      out.emplace_back(nullptr, g[j++]);
    }
  }
  return out;
}

std::string micros_since(Nanos t, Nanos origin) {
  const Nanos d = t / 1000 - origin / 1000;
  return (d < 0 ? "-" : "+") + std::to_string(d < 0 ? -d : d) + " us";
}

std::string syndrome_text(std::uint8_t raw) {
  return format_hex(raw, 2) + " (" + to_string(Syndrome{raw}) + ")";
}

// One line naming a frame: its opcode, PSN, AETH and where it sits in its file.
std::string describe(const Decoded& d, Nanos origin) {
  std::string s = "frame " + std::to_string(d.frame->index) + " at " + micros_since(d.frame->ts, origin) + ": ";
  if (d.error != ParseError::None) return s + "malformed (" + to_string(d.error) + ")";
  s += opcode_name(d.pkt.opcode()) + " psn " + format_hex(d.pkt.psn(), 6);
  if (d.pkt.info->has(ExtHeader::Aeth))
    s += " aeth " + syndrome_text(d.pkt.ext.aeth.syndrome) + " msn " + std::to_string(d.pkt.ext.aeth.msn.get());
  return s;
}

std::string payload_diff(ByteSpan a, ByteSpan b, std::size_t& at) {
  at = 0;
  while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
  auto window = [at](ByteSpan s) {
    const std::size_t n = std::min<std::size_t>(8, s.size() > at ? s.size() - at : 0);
    return n ? hex_string(s.data() + at, n) : std::string("(end)");
  };
  return window(a) + "|" + window(b);
}

void compare_fields(const Decoded& e, const Decoded& g, const CompareOptions& o, Origins origins, std::vector<FieldDiff>& out) {
  auto field = [&out](const char* name, const std::string& want, const std::string& got) {
    if (want != got) out.push_back({name, want, got});
  };
  auto num = [](std::uint64_t v) { return std::to_string(v); };
  auto hex = [](std::uint64_t v, int w = 0) { return format_hex(v, w); };
  if (e.error != ParseError::None || g.error != ParseError::None) {
    field("parse", to_string(e.error), to_string(g.error));
    return;
  }
  const Packet& a = e.pkt;
  const Packet& b = g.pkt;
  field("opcode", opcode_name(a.opcode()), opcode_name(b.opcode()));
  field("bth.dest_qp", hex(a.dest_qp(), 6), hex(b.dest_qp(), 6));
  field("bth.psn", hex(a.psn(), 6), hex(b.psn(), 6));
  field("bth.se", num(a.bth.se()), num(b.bth.se()));
  field("bth.ack_req", num(a.bth.ack_requested()), num(b.bth.ack_requested()));
  field("bth.fecn", num(a.bth.fecn()), num(b.bth.fecn()));
  field("bth.becn", num(a.bth.becn()), num(b.bth.becn()));
  field("bth.pkey", hex(a.bth.pkey.get(), 4), hex(b.bth.pkey.get(), 4));
  if (a.opcode() != b.opcode()) return;  // the extension headers differ in kind
  const OpcodeInfo& info = *a.info;
  if (info.has(ExtHeader::Aeth)) {
    const Syndrome sa{a.ext.aeth.syndrome}, sb{b.ext.aeth.syndrome};
    // Without credit comparison two ACKs agree on the syndrome whatever credit code they carry.
    const bool same = o.credits || !(sa.is_ack() && sb.is_ack()) ? sa == sb : true;
    if (!same) out.push_back({"aeth.syndrome", syndrome_text(sa.raw), syndrome_text(sb.raw)});
    const auto off = o.msn_offset.find(b.dest_qp());
    const std::uint32_t ours = (b.ext.aeth.msn.get() + (off == o.msn_offset.end() ? 0 : off->second)) & kPsnMask;
    field("aeth.msn", num(a.ext.aeth.msn.get()), num(ours));
  }
  if (info.has(ExtHeader::Reth)) {
    field("reth.va", hex(a.ext.reth.va.get(), 16), hex(b.ext.reth.va.get(), 16));
    field("reth.rkey", hex(a.ext.reth.rkey.get(), 8), hex(b.ext.reth.rkey.get(), 8));
    field("reth.dma_length", num(a.ext.reth.dma_length.get()), num(b.ext.reth.dma_length.get()));
  }
  if (info.has(ExtHeader::AtomicEth)) {
    field("atomiceth.va", hex(a.ext.atomic.va.get(), 16), hex(b.ext.atomic.va.get(), 16));
    field("atomiceth.rkey", hex(a.ext.atomic.rkey.get(), 8), hex(b.ext.atomic.rkey.get(), 8));
    field("atomiceth.swap_add", hex(a.ext.atomic.swap_add.get()), hex(b.ext.atomic.swap_add.get()));
    field("atomiceth.compare", hex(a.ext.atomic.compare.get()), hex(b.ext.atomic.compare.get()));
  }
  if (info.has(ExtHeader::AtomicAckEth))
    field("atomicacketh.original", hex(a.ext.atomic_ack.original_data.get()), hex(b.ext.atomic_ack.original_data.get()));
  if (info.has(ExtHeader::ImmDt))
    field("immdt", hex_string(reinterpret_cast<const std::byte*>(a.ext.imm.bytes.data()), 4),
          hex_string(reinterpret_cast<const std::byte*>(b.ext.imm.bytes.data()), 4));
  if (info.has(ExtHeader::Ieth)) field("ieth.rkey", hex(a.ext.ieth.rkey.get(), 8), hex(b.ext.ieth.rkey.get(), 8));
  if (info.has(ExtHeader::Deth)) {
    field("deth.qkey", hex(a.ext.deth.qkey.get(), 8), hex(b.ext.deth.qkey.get(), 8));
    field("deth.src_qp", hex(a.ext.deth.source_qp(), 6), hex(b.ext.deth.source_qp(), 6));
  }
  field("payload_length", num(a.payload_length), num(b.payload_length));
  if (!std::equal(a.payload.begin(), a.payload.end(), b.payload.begin(), b.payload.end())) {
    std::size_t at = 0;
    const std::string w = payload_diff(a.payload, b.payload, at);
    const auto bar = w.find('|');
    out.push_back({"payload[" + std::to_string(at) + "..]", w.substr(0, bar), w.substr(bar + 1)});
  }
  field("icrc", to_string(a.icrc_status), to_string(b.icrc_status));
  if (o.timing) field("time", micros_since(e.frame->ts, origins.expected), micros_since(g.frame->ts, origins.got));
}

}  // namespace

Comparison compare_frames(const std::vector<Frame>& expected, const std::vector<Frame>& got, const CompareOptions& o,
                          Origins origins, CrcBackend crc) {
  Side es, gs;
  decode(expected, crc, es);
  decode(got, crc, gs);
  Comparison c;
  c.expected_frames = es.frames.size();
  c.got_frames = gs.frames.size();
  c.expected_ignored = es.ignored;
  c.got_ignored = gs.ignored;
  std::vector<FlowKey> order = es.order;
  for (const FlowKey& k : gs.order)
    if (!es.flows.count(k)) order.push_back(k);
  auto record = [&](FrameMismatch m, const FlowKey& k, const Decoded* e, const Decoded* g) {
    ++c.mismatches;
    MismatchPlace place;
    place.qpn = k.first;
    place.responses = k.second == FlowKind::Responses;
    const Decoded* d = e ? e : g;
    place.psn = d->error == ParseError::None ? d->pkt.psn() : 0;
    place.extra_ack = !e && is_plain_ack(*g);
    if (c.shown.size() < o.max_diffs) {
      place.shown = c.shown.size();
      c.shown.push_back(std::move(m));
    }
    c.places.push_back(place);
  };
  for (const FlowKey& k : order) {
    const auto pairs = align(es.flows[k], gs.flows[k], o.coalesce_acks && k.second == FlowKind::Responses, c.acks_passed_over);
    const std::string name = flow_name(k);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const auto [e, g] = pairs[i];
      FrameMismatch m;
      m.flow = name;
      m.position = i + 1;
      if (!g) {
        m.what = "missing from the output: expected " + describe(*e, origins.expected);
        record(std::move(m), k, e, g);
        continue;
      }
      if (!e) {
        m.what = "not expected: output " + describe(*g, origins.got);
        record(std::move(m), k, e, g);
        continue;
      }
      compare_fields(*e, *g, o, origins, m.fields);
      if (m.fields.empty()) continue;
      m.what = "expected " + describe(*e, origins.expected) + "; output " + describe(*g, origins.got);
      record(std::move(m), k, e, g);
    }
  }
  return c;
}

void explain_by_gaps(Comparison& c, const std::vector<CaptureGap>& gaps) {
  std::map<const CaptureGap*, std::size_t> used;
  for (MismatchPlace& p : c.places) {
    if (!p.responses) continue;
    for (const CaptureGap& g : gaps) {
      const bool covered_past_gap = p.extra_ack && p.psn == psn_add(g.first, -1);
      if (g.answers_to != p.qpn || (psn_before(p.psn, g.first) && !covered_past_gap)) continue;
      ++c.explained;
      ++used[&g];
      if (p.shown != SIZE_MAX)
        c.shown[p.shown].explained_by = "PSNs " + format_hex(g.first, 6) + ".." + format_hex(g.last, 6) + " to QP " +
                                        format_hex(g.qpn, 6) + " are missing from the capture";
      break;
    }
  }
  for (const auto& [g, n] : used)
    c.gap_notes.push_back("requests to QP " + format_hex(g->qpn, 6) + ": PSNs " + format_hex(g->first, 6) + ".." +
                          format_hex(g->last, 6) + " are missing after frame " + std::to_string(g->after_frame) +
                          (g->acked_past ? " although the real responder acknowledged past them"
                                         : ", and no answer of the real responder after them was captured") +
                          " (the sniffer dropped them); they explain " + std::to_string(n) + " difference" + (n == 1 ? "" : "s") +
                          " in the responses to QP " + format_hex(g->answers_to, 6));
}

std::string format_comparison(const Comparison& c, const std::string& expected_name) {
  std::ostringstream o;
  if (c.pass()) {
    o << "PASS: the output's " << c.got_frames << " RoCEv2 frames match " << expected_name << "\n";
  } else if (c.pass_but_for_gaps()) {
    o << "PASS: the output's " << c.got_frames << " RoCEv2 frames match " << expected_name << " except for " << c.mismatches
      << " difference" << (c.mismatches == 1 ? "" : "s") << ", all explained by frames missing from the capture:\n";
    for (const std::string& n : c.gap_notes) o << "  " << n << "\n";
  } else {
    o << "FAIL: " << c.mismatches << " difference" << (c.mismatches == 1 ? "" : "s") << " between the output ("
      << c.got_frames << " RoCEv2 frames) and " << expected_name << " (" << c.expected_frames << " RoCEv2 frames)";
    if (c.shown.size() < c.mismatches) o << "; the first " << c.shown.size() << " follow";
    o << "\n";
    if (c.explained) {
      o << "  (" << c.explained << " of them explained by frames missing from the capture:\n";
      for (const std::string& n : c.gap_notes) o << "   " << n << "\n";
      o << "  )\n";
    }
    for (const FrameMismatch& m : c.shown) {
      o << "  " << m.flow << ", #" << m.position << ": " << m.what << (m.explained_by.empty() ? "" : " [explained: " + m.explained_by + "]")
        << "\n";
      if (!m.fields.empty()) {
        std::size_t w = 5;
        for (const FieldDiff& f : m.fields) w = std::max(w, f.field.size());
        o << "      " << std::string(w, ' ') << "  expected / output\n";
        for (const FieldDiff& f : m.fields)
          o << "      " << f.field << std::string(w - f.field.size(), ' ') << "  " << f.expected << " / " << f.got << "\n";
      }
    }
  }
  if (c.acks_passed_over)
    o << "  (" << c.acks_passed_over << " ACKs passed over: a later response on the other side covers them)\n";
  if (c.expected_ignored || c.got_ignored)
    o << "  (not compared: " << c.expected_ignored << " non-RoCEv2 frames expected, " << c.got_ignored
      << " in the output)\n";
  return o.str();
}

}  // namespace roce::replay
