#include "apps/inspect/fields.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <map>

#include "protocol/aeth.hpp"
#include "protocol/feth.hpp"

namespace roce::inspect {
namespace {

using proto::ExtHeader;
using proto::feth_placement;
using proto::feth_selectivity;
using V = Value;
using C = FieldContext;
using F = FrameView;

constexpr std::int64_t kNanosPerSecond = 1'000'000'000;

V when(bool cond, std::uint64_t v) { return cond ? V::num(v) : V::none(); }
V bth_num(const F& f, std::uint64_t v) { return when(f.has_bth, v); }
V bth_bool(const F& f, bool b) { return when(f.has_bth, b ? 1 : 0); }
V ext_num(const F& f, ExtHeader h, std::uint64_t v) { return when(f.has(h), v); }
V flag(bool b) { return when(b, 1); }

std::string hex_bytes(const std::uint8_t* p, std::size_t n) {
  std::string s = "0x";
  char b[3];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof b, "%02x", p[i]);
    s += b;
  }
  return s;
}

std::string epoch_text(std::int64_t ns) {
  char buf[32];
  const std::int64_t sec = ns >= 0 ? ns / kNanosPerSecond : -((-ns + kNanosPerSecond - 1) / kNanosPerSecond);
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%09" PRId64, sec, ns - sec * kNanosPerSecond);
  return buf;
}

std::string utc_text(std::int64_t ns) {
  const std::int64_t sec = ns >= 0 ? ns / kNanosPerSecond : -((-ns + kNanosPerSecond - 1) / kNanosPerSecond);
  const std::time_t t = static_cast<std::time_t>(sec);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%09" PRId64, tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ns - sec * kNanosPerSecond);
  return buf;
}

std::string aeth_type(std::uint8_t syndrome) {
  switch (proto::Syndrome{syndrome}.type()) {
    case proto::AckType::Ack: return "ack";
    case proto::AckType::RnrNak: return "rnr-nak";
    case proto::AckType::Nak: return "nak";
    case proto::AckType::Reserved: break;
  }
  return "reserved";
}

std::vector<FieldDef> build() {
  using T = FieldType;
  using B = Base;
  return {
      {"frame", T::Uint, B::Dec, "frame number in its file, from 1", [](const F& f, const C&) { return V::num(f.index); }},
      {"file", T::Text, B::Dec, "the capture file", [](const F& f, const C& c) {
         return c.files && f.file < c.files->size() ? V::text((*c.files)[f.file]) : V::none();
       }},
      {"time", T::Real, B::Dec, "seconds since the first frame of its file",
       [](const F& f, const C&) { return V::real(static_cast<double>(f.rel_ns) / 1e9); }},
      {"time.epoch", T::Text, B::Dec, "capture time, seconds since 1970 with 9 decimals",
       [](const F& f, const C&) { return V::text(epoch_text(f.ts_ns)); }},
      {"time.utc", T::Text, B::Dec, "capture time as a UTC date and time",
       [](const F& f, const C&) { return V::text(utc_text(f.ts_ns)); }},
      {"caplen", T::Uint, B::Dec, "bytes of the frame in the file", [](const F& f, const C&) { return V::num(f.caplen); }},
      {"len", T::Uint, B::Dec, "bytes of the frame on the wire", [](const F& f, const C&) { return V::num(f.wire_len); }},
      {"verdict", T::Text, B::Dec, "roce, dc, rocev1, not-roce or malformed",
       [](const F& f, const C&) { return V::text(capture::to_string(f.verdict)); }},
      {"reason", T::Text, B::Dec, "ok, or why the frame is not a clean RoCE frame",
       [](const F& f, const C&) { return V::text(f.reason()); }},
      {"cut", T::Flag, B::Dec, "the frame is shorter than its headers say (snap length)",
       [](const F& f, const C&) { return flag(f.flag(FrameFlag::Cut) || f.flag(FrameFlag::IpBeyondFrame)); }},
      {"eth.src", T::Text, B::Dec, "source MAC", [](const F& f, const C&) {
         return f.has_eth ? V::text(proto::mac_to_string(f.eth_src)) : V::none();
       }},
      {"eth.dst", T::Text, B::Dec, "destination MAC", [](const F& f, const C&) {
         return f.has_eth ? V::text(proto::mac_to_string(f.eth_dst)) : V::none();
       }},
      {"vlan.id", T::Uint, B::Dec, "VLAN ID of the outer tag",
       [](const F& f, const C&) { return f.vlan_id ? V::num(*f.vlan_id) : V::none(); }},
      {"ip.version", T::Uint, B::Dec, "4 or 6 (6 for a RoCEv1 GRH)",
       [](const F& f, const C&) { return when(f.has_ip, static_cast<std::uint64_t>(f.ip_src.version)); }},
      {"ip.src", T::Ip, B::Dec, "source IP address (source GID for RoCEv1)",
       [](const F& f, const C&) { return f.has_ip ? V::address(f.ip_src) : V::none(); }},
      {"ip.dst", T::Ip, B::Dec, "destination IP address (destination GID for RoCEv1)",
       [](const F& f, const C&) { return f.has_ip ? V::address(f.ip_dst) : V::none(); }},
      {"ip.dscp", T::Uint, B::Dec, "DSCP", [](const F& f, const C&) { return when(f.has_ip, f.ip_tclass >> 2); }},
      {"ip.ecn", T::Text, B::Dec, "ECN codepoint: not-ect, ect0, ect1, ce", [](const F& f, const C&) {
         return f.has_ip ? V::text(proto::to_string(static_cast<proto::Ecn>(f.ip_tclass & 3))) : V::none();
       }},
      {"ip.ttl", T::Uint, B::Dec, "TTL or hop limit", [](const F& f, const C&) { return when(f.has_ip, f.ip_ttl); }},
      {"ip.len", T::Uint, B::Dec, "IP datagram length the header gives", [](const F& f, const C&) { return when(f.has_ip && f.ip_len != 0, f.ip_len); }},
      {"udp.srcport", T::Uint, B::Dec, "UDP source port", [](const F& f, const C&) { return when(f.has_udp, f.udp_sport); }},
      {"udp.dstport", T::Uint, B::Dec, "UDP destination port", [](const F& f, const C&) { return when(f.has_udp, f.udp_dport); }},
      {"udp.len", T::Uint, B::Dec, "UDP length", [](const F& f, const C&) { return when(f.has_udp, f.udp_len); }},
      {"opcode", T::Uint, B::Dec, "BTH opcode (filters also take names: opcode == RC_SEND_ONLY)",
       [](const F& f, const C&) { return bth_num(f, f.bth.opcode); }},
      {"opcode.name", T::Text, B::Dec, "opcode name", [](const F& f, const C&) {
         return f.has_bth ? V::text(f.opcode_name()) : V::none();
       }},
      {"transport", T::Text, B::Dec, "RC, UC, UD, CNP, DC, XRC, reserved or vendor",
       [](const F& f, const C&) { return f.has_bth ? V::text(f.transport()) : V::none(); }},
      {"se", T::Bool, B::Dec, "BTH solicited event", [](const F& f, const C&) { return bth_bool(f, f.bth.se()); }},
      {"m", T::Bool, B::Dec, "BTH MigReq", [](const F& f, const C&) { return bth_bool(f, f.bth.mig_req()); }},
      {"padcnt", T::Uint, B::Dec, "BTH pad count", [](const F& f, const C&) { return bth_num(f, f.bth.pad_count()); }},
      {"tver", T::Uint, B::Dec, "BTH transport version", [](const F& f, const C&) { return bth_num(f, f.bth.tver()); }},
      {"pkey", T::Uint, B::Hex4, "BTH P_Key", [](const F& f, const C&) { return bth_num(f, f.bth.pkey.get()); }},
      {"fecn", T::Bool, B::Dec, "BTH FECN", [](const F& f, const C&) { return bth_bool(f, f.bth.fecn()); }},
      {"becn", T::Bool, B::Dec, "BTH BECN (set in CNPs)", [](const F& f, const C&) { return bth_bool(f, f.bth.becn()); }},
      {"qpn", T::Uint, B::Hex6, "BTH destination QP", [](const F& f, const C&) { return bth_num(f, f.bth.dest_qp.get()); }},
      {"ackreq", T::Bool, B::Dec, "BTH AckReq", [](const F& f, const C&) { return bth_bool(f, f.bth.ack_requested()); }},
      {"psn", T::Uint, B::Dec, "BTH PSN", [](const F& f, const C&) { return bth_num(f, f.bth.psn.get()); }},
      {"dc.eth", T::Hex64, B::Dec, "DC: the DCT ETH after the BTH", [](const F& f, const C&) { return when(f.dc, f.dct_eth); }},
      {"dc.connect", T::Text, B::Dec, "DC: the DC Connect ETH (opcode 0x55 with SE clear), hex", [](const F& f, const C&) {
         return f.dc_connect ? V::text(hex_bytes(f.dc_connect->data(), f.dc_connect->size())) : V::none();
       }},
      {"rdeth.eecnxt", T::Uint, B::Hex6, "RDETH EE context",
       [](const F& f, const C&) { return ext_num(f, ExtHeader::Rdeth, f.ext.rdeth.ee_context.get() & 0xFFFFFF); }},
      {"deth.qkey", T::Uint, B::Hex8, "DETH Q_Key", [](const F& f, const C&) { return ext_num(f, ExtHeader::Deth, f.ext.deth.qkey.get()); }},
      {"deth.srcqp", T::Uint, B::Hex6, "DETH source QP",
       [](const F& f, const C&) { return ext_num(f, ExtHeader::Deth, f.ext.deth.source_qp()); }},
      {"feth", T::Uint, B::Hex8, "FETH (FLUSH)", [](const F& f, const C&) { return ext_num(f, ExtHeader::Feth, f.ext.feth.bits.get()); }},
      {"feth.placement", T::Uint, B::Dec, "FETH placement type (bit 0 global visibility, bit 1 persistence)",
       [](const F& f, const C&) { return ext_num(f, ExtHeader::Feth, feth_placement(f.ext.feth)); }},
      {"feth.selectivity", T::Uint, B::Dec, "FETH selectivity level (0 a range, 1 the whole region)",
       [](const F& f, const C&) { return ext_num(f, ExtHeader::Feth, feth_selectivity(f.ext.feth)); }},
      {"reth.va", T::Hex64, B::Dec, "RETH virtual address", [](const F& f, const C&) { return ext_num(f, ExtHeader::Reth, f.ext.reth.va.get()); }},
      {"reth.rkey", T::Uint, B::Hex8, "RETH R_Key", [](const F& f, const C&) { return ext_num(f, ExtHeader::Reth, f.ext.reth.rkey.get()); }},
      {"reth.len", T::Uint, B::Dec, "RETH DMA length",
       [](const F& f, const C&) { return ext_num(f, ExtHeader::Reth, f.ext.reth.dma_length.get()); }},
      {"atomic.va", T::Hex64, B::Dec, "AtomicETH virtual address",
       [](const F& f, const C&) { return ext_num(f, ExtHeader::AtomicEth, f.ext.atomic.va.get()); }},
      {"atomic.rkey", T::Uint, B::Hex8, "AtomicETH R_Key",
       [](const F& f, const C&) { return ext_num(f, ExtHeader::AtomicEth, f.ext.atomic.rkey.get()); }},
      {"atomic.swap", T::Hex64, B::Dec, "AtomicETH swap (or add) data",
       [](const F& f, const C&) { return ext_num(f, ExtHeader::AtomicEth, f.ext.atomic.swap_add.get()); }},
      {"atomic.compare", T::Hex64, B::Dec, "AtomicETH compare data",
       [](const F& f, const C&) { return ext_num(f, ExtHeader::AtomicEth, f.ext.atomic.compare.get()); }},
      {"aeth.syndrome", T::Uint, B::Hex2, "AETH syndrome",
       [](const F& f, const C&) { return ext_num(f, ExtHeader::Aeth, f.ext.aeth.syndrome); }},
      {"aeth.type", T::Text, B::Dec, "ack, rnr-nak, nak or reserved",
       [](const F& f, const C&) { return f.has(ExtHeader::Aeth) ? V::text(aeth_type(f.ext.aeth.syndrome)) : V::none(); }},
      {"aeth.meaning", T::Text, B::Dec, "the syndrome spelt out (credits, RNR timer, NAK code)", [](const F& f, const C&) {
         return f.has(ExtHeader::Aeth) ? V::text(proto::to_string(proto::Syndrome{f.ext.aeth.syndrome})) : V::none();
       }},
      {"aeth.msn", T::Uint, B::Dec, "AETH MSN", [](const F& f, const C&) { return ext_num(f, ExtHeader::Aeth, f.ext.aeth.msn.get()); }},
      {"atomicack.orig", T::Hex64, B::Dec, "AtomicAckETH original remote data",
       [](const F& f, const C&) { return ext_num(f, ExtHeader::AtomicAckEth, f.ext.atomic_ack.original_data.get()); }},
      {"immdt", T::Uint, B::Hex8, "immediate data (its four bytes in wire order)", [](const F& f, const C&) {
         const auto& b = f.ext.imm.bytes;
         return ext_num(f, ExtHeader::ImmDt, std::uint64_t{b[0]} << 24 | std::uint64_t{b[1]} << 16 | std::uint64_t{b[2]} << 8 | b[3]);
       }},
      {"ieth.rkey", T::Uint, B::Hex8, "IETH R_Key to invalidate",
       [](const F& f, const C&) { return ext_num(f, ExtHeader::Ieth, f.ext.ieth.rkey.get()); }},
      {"payload.len", T::Uint, B::Dec, "payload bytes the headers give (without pad)",
       [](const F& f, const C&) { return f.payload_len ? V::num(*f.payload_len) : V::none(); }},
      {"payload.captured", T::Uint, B::Dec, "of the payload, bytes the capture holds",
       [](const F& f, const C&) { return when(f.payload_len.has_value(), f.payload_captured); }},
      {"icrc", T::Text, B::Dec, "ok, bad, or not-checkable (frame cut, or IPv4 options)",
       [](const F& f, const C&) { return f.icrc ? V::text(proto::to_string(*f.icrc)) : V::none(); }},
      {"icrc.value", T::Uint, B::Hex8, "the ICRC as a CRC value (the wire stores it LSB first)",
       [](const F& f, const C&) { return f.icrc_value ? V::num(*f.icrc_value) : V::none(); }},
      {"gsi", T::Flag, B::Dec, "a UD datagram to or from QP1 (CM and other management datagrams)",
       [](const F& f, const C&) { return flag(f.flag(FrameFlag::Gsi)); }},
      {"mad", T::Text, B::Dec, "the management datagram (QP1), decoded", [](const F& f, const C&) {
         return f.mad ? V::text(f.mad->text) : V::none();
       }},
      {"mad.class", T::Uint, B::Hex2, "MAD management class (0x07: CM)",
       [](const F& f, const C&) { return f.mad ? V::num(f.mad->mgmt_class) : V::none(); }},
      {"mad.attribute", T::Uint, B::Hex4, "MAD attribute ID (CM: 0x10 REQ, 0x13 REP, 0x14 RTU, 0x12 REJ, 0x15 DREQ...)",
       [](const F& f, const C&) { return f.mad ? V::num(f.mad->attribute) : V::none(); }},
      {"mad.tid", T::Hex64, B::Dec, "MAD transaction ID", [](const F& f, const C&) { return f.mad ? V::num(f.mad->tid) : V::none(); }},
      {"cm.local_comm", T::Uint, B::Hex8, "CM local communication ID",
       [](const F& f, const C&) { return f.mad && f.mad->local_comm ? V::num(*f.mad->local_comm) : V::none(); }},
      {"cm.remote_comm", T::Uint, B::Hex8, "CM remote communication ID",
       [](const F& f, const C&) { return f.mad && f.mad->remote_comm ? V::num(*f.mad->remote_comm) : V::none(); }},
      {"cm.service_id", T::Hex64, B::Dec, "CM REQ service ID",
       [](const F& f, const C&) { return f.mad && f.mad->service_id ? V::num(*f.mad->service_id) : V::none(); }},
      {"cm.qpn", T::Uint, B::Hex6, "CM REQ/REP: the sender's QPN",
       [](const F& f, const C&) { return f.mad && f.mad->qpn ? V::num(*f.mad->qpn) : V::none(); }},
      {"cm.psn", T::Uint, B::Dec, "CM REQ/REP: the sender's starting PSN",
       [](const F& f, const C&) { return f.mad && f.mad->start_psn ? V::num(*f.mad->start_psn) : V::none(); }},
      {"cm.rej_reason", T::Uint, B::Dec, "CM REJ reason code",
       [](const F& f, const C&) { return f.mad && f.mad->rej_reason ? V::num(*f.mad->rej_reason) : V::none(); }},
      {"nvme", T::Text, B::Dec, "an NVMe/RDMA command or response capsule in an RC SEND, decoded",
       [](const F& f, const C&) { return f.nvme ? V::text(f.nvme->text) : V::none(); }},
      {"nvme.response", T::Flag, B::Dec, "the capsule is a 16-byte response (CQE)",
       [](const F& f, const C&) { return f.nvme ? flag(f.nvme->response) : V::none(); }},
      {"nvme.opcode", T::Uint, B::Hex2, "NVMe command opcode (0x7F: Fabrics)",
       [](const F& f, const C&) { return f.nvme && !f.nvme->response ? V::num(f.nvme->opcode) : V::none(); }},
      {"nvme.cid", T::Uint, B::Dec, "NVMe command identifier",
       [](const F& f, const C&) { return f.nvme ? V::num(f.nvme->cid) : V::none(); }},
      {"nvme.nsid", T::Uint, B::Dec, "NVMe namespace ID",
       [](const F& f, const C&) { return f.nvme && f.nvme->nsid ? V::num(*f.nvme->nsid) : V::none(); }},
      {"nvme.slba", T::Uint, B::Dec, "starting LBA (Read, Write, Write Zeroes)",
       [](const F& f, const C&) { return f.nvme && f.nvme->slba ? V::num(*f.nvme->slba) : V::none(); }},
      {"nvme.nlb", T::Uint, B::Dec, "number of blocks (Read, Write, Write Zeroes)",
       [](const F& f, const C&) { return f.nvme && f.nvme->nlb ? V::num(*f.nvme->nlb) : V::none(); }},
      {"nvme.length", T::Uint, B::Dec, "data bytes the command's SGL describes",
       [](const F& f, const C&) { return f.nvme && f.nvme->length ? V::num(*f.nvme->length) : V::none(); }},
      {"nvme.status", T::Uint, B::Hex4, "response status: SCT << 8 | SC",
       [](const F& f, const C&) { return f.nvme && f.nvme->status ? V::num(*f.nvme->status) : V::none(); }},
      {"nak", T::Flag, B::Dec, "an RNR NAK or NAK", [](const F& f, const C&) { return flag(f.is_nak()); }},
      {"cnp", T::Flag, B::Dec, "a CNP (opcode 0x81)", [](const F& f, const C&) { return flag(f.is_cnp()); }},
      {"ce", T::Flag, B::Dec, "IP ECN is CE (congestion experienced)", [](const F& f, const C&) { return flag(f.is_ce()); }},
      {"retransmission", T::Flag, B::Dec, "a PSN this flow already carried (requests and READ responses)",
       [](const F& f, const C&) { return flag(f.flag(FrameFlag::Retransmission)); }},
      {"duplicate", T::Flag, B::Dec, "a retransmitted request the responder had already acknowledged",
       [](const F& f, const C&) { return flag(f.flag(FrameFlag::Duplicate)); }},
  };
}

// tshark's names for the same fields (tshark -G fields, 4.0).
const std::map<std::string, std::string, std::less<>>& alias_table() {
  static const std::map<std::string, std::string, std::less<>> t = {
      {"frame.number", "frame"},
      {"frame.time_relative", "time"},
      {"frame.time_epoch", "time.epoch"},
      {"frame.len", "len"},
      {"frame.cap_len", "caplen"},
      {"infiniband.bth.opcode", "opcode"},
      {"infiniband.bth.se", "se"},
      {"infiniband.bth.m", "m"},
      {"infiniband.bth.padcnt", "padcnt"},
      {"infiniband.bth.tver", "tver"},
      {"infiniband.bth.p_key", "pkey"},
      {"infiniband.bth.destqp", "qpn"},
      {"infiniband.bth.a", "ackreq"},
      {"infiniband.bth.psn", "psn"},
      {"infiniband.rdeth.eecnxt", "rdeth.eecnxt"},
      {"infiniband.deth.q_key", "deth.qkey"},
      {"infiniband.deth.srcqp", "deth.srcqp"},
      {"infiniband.reth.va", "reth.va"},
      {"infiniband.reth.r_key", "reth.rkey"},
      {"infiniband.reth.dmalen", "reth.len"},
      {"infiniband.atomiceth.swapdt", "atomic.swap"},
      {"infiniband.atomiceth.cmpdt", "atomic.compare"},
      {"infiniband.aeth.syndrome", "aeth.syndrome"},
      {"infiniband.aeth.msn", "aeth.msn"},
      {"infiniband.atomicacketh.origremdt", "atomicack.orig"},
      {"infiniband.immdt", "immdt"},
      {"infiniband.ieth", "ieth.rkey"},
      {"infiniband.mad.mgmtclass", "mad.class"},
      {"infiniband.mad.attributeid", "mad.attribute"},
      {"infiniband.mad.transactionid", "mad.tid"},
      {"infiniband.cm.req.serviceid", "cm.service_id"},
      {"infiniband.cm.rej.reason", "cm.rej_reason"},
      {"dest_qp", "qpn"},
      {"destqp", "qpn"},
  };
  return t;
}

}  // namespace

std::string to_string(FieldType t) {
  switch (t) {
    case FieldType::Uint: return "number";
    case FieldType::Hex64: return "hex64";
    case FieldType::Real: return "seconds";
    case FieldType::Bool: return "bool";
    case FieldType::Flag: return "flag";
    case FieldType::Text: return "text";
    case FieldType::Ip: return "address";
  }
  return "unknown";
}

const std::vector<FieldDef>& all_fields() {
  static const std::vector<FieldDef> fields = build();
  return fields;
}

const FieldDef* find_field(std::string_view name) {
  const auto& alias = alias_table();
  if (const auto it = alias.find(name); it != alias.end()) name = it->second;
  for (const FieldDef& f : all_fields())
    if (name == f.name) return &f;
  return nullptr;
}

std::string suggest_fields(std::string_view name) {
  // Names within two edits, or that share the part before the first dot.
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      std::size_t diag = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        const std::size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    return row[b.size()];
  };
  const std::string_view stem = name.substr(0, name.find('.'));
  std::string s;
  int n = 0;
  for (const FieldDef& f : all_fields()) {
    const std::string_view fn = f.name;
    const bool near = distance(name, fn) <= 2 || (name.find('.') != std::string_view::npos && fn.substr(0, fn.find('.')) == stem);
    if (!near) continue;
    if (n++ == 6) break;
    s += (s.empty() ? "" : ", ") + std::string(fn);
  }
  return s;
}

std::vector<std::string> aliases_of(const FieldDef& f) {
  std::vector<std::string> out;
  for (const auto& [alias, target] : alias_table())
    if (target == f.name) out.push_back(alias);
  return out;
}

std::string format_value(const FieldDef& f, const Value& v) {
  char buf[40];
  switch (v.kind) {
    case Value::Kind::Absent: return {};
    case Value::Kind::Text: return v.s;
    case Value::Kind::Ip: return v.ip.str();
    case Value::Kind::Real: std::snprintf(buf, sizeof buf, "%.9f", v.d); return buf;
    case Value::Kind::Number: break;
  }
  if (f.type == FieldType::Hex64) {
    std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v.u);
    return buf;
  }
  switch (f.base) {
    case Base::Dec: std::snprintf(buf, sizeof buf, "%" PRIu64, v.u); break;
    case Base::Hex2: std::snprintf(buf, sizeof buf, "0x%02" PRIx64, v.u); break;
    case Base::Hex4: std::snprintf(buf, sizeof buf, "0x%04" PRIx64, v.u); break;
    case Base::Hex6: std::snprintf(buf, sizeof buf, "0x%06" PRIx64, v.u); break;
    case Base::Hex8: std::snprintf(buf, sizeof buf, "0x%08" PRIx64, v.u); break;
  }
  return buf;
}

std::optional<std::uint8_t> opcode_from_name(std::string_view name) {
  for (unsigned op = 0; op < 256; ++op) {
    for (bool se : {false, true})
      if (proto::describe_opcode(static_cast<std::uint8_t>(op), se).name == name) return static_cast<std::uint8_t>(op);
  }
  return std::nullopt;
}

}  // namespace roce::inspect
