#include "apps/inspect/table_output.hpp"

#include <cinttypes>
#include <cstdio>

#include "apps/inspect/fields.hpp"
#include "protocol/aeth.hpp"

namespace roce::inspect {
namespace {

using proto::ExtHeader;

// Widths fit the longest verdict ("malformed"), reason ("payload-length-invalid") and opcode
// name ("DC_RDMA_WRITE_ONLY_WITH_IMMEDIATE").
constexpr int kReasonWidth = 22;
constexpr int kOpcodeWidth = 33;

std::string fmt(const char* f, auto... args) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, args...);
  return buf;
}

std::string hex24(std::uint32_t v) { return fmt("0x%06x", v); }
std::string hex32(std::uint32_t v) { return fmt("0x%08x", v); }
std::string hex64(std::uint64_t v) { return fmt("0x%016" PRIx64, v); }

const FieldDef& field(const char* name) { return *find_field(name); }

std::string time_cells(const FrameView& v, TimeFormat t) {
  static const FieldDef& rel = field("time");
  static const FieldDef& utc = field("time.utc");
  static const FieldDef& epoch = field("time.epoch");
  const FieldContext c;
  switch (t) {
    case TimeFormat::Relative: return fmt("%14s", format_value(rel, rel.get(v, c)).c_str());
    case TimeFormat::Utc: return format_value(utc, utc.get(v, c));
    case TimeFormat::Epoch: return fmt("%20s", format_value(epoch, epoch.get(v, c)).c_str());
    case TimeFormat::Both: break;
  }
  return fmt("%14s", format_value(rel, rel.get(v, c)).c_str()) + "  " + format_value(utc, utc.get(v, c));
}

std::string time_header(TimeFormat t) {
  switch (t) {
    case TimeFormat::Relative: return fmt("%14s", "Time");
    case TimeFormat::Utc: return fmt("%-29s", "Date/time (UTC)");
    case TimeFormat::Epoch: return fmt("%20s", "Epoch time");
    case TimeFormat::Both: break;
  }
  return fmt("%14s", "Time") + "  " + fmt("%-29s", "Date/time (UTC)");
}

std::string pad(const std::string& s, int width) { return s.size() >= static_cast<std::size_t>(width) ? s : s + std::string(width - s.size(), ' '); }

std::string row(const std::string& no, const std::string& time, const std::string& macs, const std::string& src,
                const std::string& dst, const std::string& sport, const std::string& verdict, const std::string& reason,
                const std::string& opcode, const std::string& qp, const std::string& psn, const std::string& ecn,
                const std::string& fba, const std::string& payload, const std::string& icrc, const std::string& detail) {
  std::string s = fmt("%7s", no.c_str()) + "  " + time + "  ";
  if (!macs.empty()) s += macs + "  ";
  s += pad(src, 15) + "  " + pad(dst, 15) + "  " + fmt("%5s", sport.c_str()) + "  " + pad(verdict, 9) + "  " +
       pad(reason, kReasonWidth) + "  " + pad(opcode, kOpcodeWidth) + "  " + fmt("%8s", qp.c_str()) + "  " +
       fmt("%8s", psn.c_str()) + "  " + pad(ecn, 7) + "  " + pad(fba, 5) + "  " + fmt("%11s", payload.c_str()) + "  " +
       pad(icrc, 13) + "  " + detail;
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

std::string frame_details(const FrameView& v) {
  std::string d;
  auto add = [&d](const std::string& s) {
    if (!d.empty()) d += "  ";
    d += s;
  };
  if (v.dc) add("dct_eth=" + hex64(v.dct_eth));
  if (v.dc_connect) {
    std::string h;
    for (std::uint8_t b : *v.dc_connect) h += fmt("%02x", b);
    add("dc_connect=" + h);
  }
  if (v.has(ExtHeader::Rdeth)) add("rdeth eecnxt=" + hex24(v.ext.rdeth.ee_context.get() & 0xFFFFFF));
  if (v.has(ExtHeader::Deth)) add("deth qkey=" + hex32(v.ext.deth.qkey.get()) + " srcqp=" + hex24(v.ext.deth.source_qp()));
  if (v.has(ExtHeader::Feth)) add("feth=" + hex32(v.ext.feth.bits.get()));
  if (v.has(ExtHeader::Reth))
    add("reth va=" + hex64(v.ext.reth.va.get()) + " rkey=" + hex32(v.ext.reth.rkey.get()) + " len=" +
        std::to_string(v.ext.reth.dma_length.get()));
  if (v.has(ExtHeader::AtomicEth))
    add("atomic va=" + hex64(v.ext.atomic.va.get()) + " rkey=" + hex32(v.ext.atomic.rkey.get()) + " swap_add=" +
        hex64(v.ext.atomic.swap_add.get()) + " compare=" + hex64(v.ext.atomic.compare.get()));
  if (v.has(ExtHeader::Aeth))
    add("aeth=" + fmt("0x%02x", v.ext.aeth.syndrome) + " (" + proto::to_string(proto::Syndrome{v.ext.aeth.syndrome}) +
        ") msn=" + std::to_string(v.ext.aeth.msn.get()));
  if (v.has(ExtHeader::AtomicAckEth)) add("atomicack orig=" + hex64(v.ext.atomic_ack.original_data.get()));
  if (v.has(ExtHeader::ImmDt)) {
    const auto& b = v.ext.imm.bytes;
    add(fmt("imm=0x%02x%02x%02x%02x", b[0], b[1], b[2], b[3]));
  }
  if (v.has(ExtHeader::Ieth)) add("ieth rkey=" + hex32(v.ext.ieth.rkey.get()));
  if (v.flag(FrameFlag::Gsi)) add(v.mad ? "mad: " + *v.mad : std::string("gsi (QP1 management datagram)"));
  if (v.flag(FrameFlag::Retransmission)) add(v.flag(FrameFlag::Duplicate) ? "retransmission (duplicate: already acknowledged)" : "retransmission");
  if (v.flag(FrameFlag::Cut)) add("cut by the snap length: captured " + std::to_string(v.caplen) + " of " + std::to_string(v.wire_len) + " bytes");
  if (v.flag(FrameFlag::IpBeyondFrame))
    add(std::string(v.ip_src.version == proto::IpVersion::V4 ? "IPv4 total length" : "IPv6 payload length") +
        " exceeds packet length (" + std::to_string(v.caplen) + " bytes; the sniffer cut the frame)");
  return d;
}

std::string table_header(const TableOptions& o) {
  return row("No.", time_header(o.time), o.link ? pad("Src MAC", 17) + "  " + pad("Dst MAC", 17) : "", "Source",
             "Destination", "Sport", "Verdict", "Reason", "Opcode", "DestQP", "PSN", "ECN", "F B A", "Payload", "ICRC",
             "Details");
}

std::string table_row(const FrameView& v, const TableOptions& o) {
  const std::string macs = !o.link ? "" : v.has_eth ? proto::mac_to_string(v.eth_src) + "  " + proto::mac_to_string(v.eth_dst)
                                                    : pad("-", 17) + "  " + pad("-", 17);
  const bool b = v.has_bth;
  std::string payload = "-";
  if (v.payload_len) {
    payload = std::to_string(*v.payload_len);
    // A cut frame shows what it holds of the payload, not a length it does not have.
    if (v.payload_captured < *v.payload_len) payload = std::to_string(v.payload_captured) + "/" + payload;
  }
  return row(std::to_string(v.index), time_cells(v, o.time), macs, v.has_ip ? v.ip_src.str() : "-",
             v.has_ip ? v.ip_dst.str() : "-", v.has_udp ? std::to_string(v.udp_sport) : "-", capture::to_string(v.verdict),
             v.reason(), b ? v.opcode_name() : "-", b ? hex24(v.bth.dest_qp.get()) : "-", b ? std::to_string(v.bth.psn.get()) : "-",
             v.has_ip ? proto::to_string(static_cast<proto::Ecn>(v.ip_tclass & 3)) : "-",
             b ? fmt("%d %d %d", v.bth.fecn(), v.bth.becn(), v.bth.ack_requested()) : "-", payload,
             v.icrc ? proto::to_string(*v.icrc) : "-", frame_details(v));
}

}  // namespace roce::inspect
