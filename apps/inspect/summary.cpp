#include "apps/inspect/summary.hpp"

#include <cstdio>

#include "lib/util/json_writer.hpp"

namespace roce::inspect {
namespace {

using capture::Verdict;
using proto::IcrcStatus;
using proto::ParseError;

constexpr std::array kVerdictOrder{Verdict::Roce, Verdict::RoceV1, Verdict::NotRoce, Verdict::Malformed};
constexpr std::array kIcrcOrder{IcrcStatus::Ok, IcrcStatus::Bad, IcrcStatus::NotCheckable, IcrcStatus::NotChecked};

std::string line(const std::string& label, std::uint64_t n) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "  %-36s %10llu\n", label.c_str(), static_cast<unsigned long long>(n));
  return buf;
}

std::string opcode_label(std::uint8_t op) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x ", op);
  return buf + proto::opcode_name(op);
}

}  // namespace

void Summary::add(const FrameView& v) {
  ++frames_;
  ++verdicts_[static_cast<std::size_t>(v.verdict)];
  ++reasons_[static_cast<std::size_t>(v.error)];
  if (v.verdict == Verdict::Roce && v.bth) ++opcodes_[v.bth->opcode];
  if (v.icrc) ++icrc_[static_cast<std::size_t>(*v.icrc)];
}

std::string Summary::human(bool complete) const {
  std::string s = "frames: " + std::to_string(frames_) + (complete ? "" : " (reading stopped early)") + "\n";
  s += "verdicts:\n";
  for (Verdict v : kVerdictOrder)
    if (verdict_count(v)) s += line(capture::to_string(v), verdict_count(v));
  s += "reasons:\n";
  for (std::size_t e = 0; e < reasons_.size(); ++e)
    if (reasons_[e]) s += line(proto::to_string(static_cast<ParseError>(e)), reasons_[e]);
  s += "opcodes (RoCEv2 frames):\n";
  for (std::size_t op = 0; op < opcodes_.size(); ++op)
    if (opcodes_[op]) s += line(opcode_label(static_cast<std::uint8_t>(op)), opcodes_[op]);
  s += "icrc (RoCEv2 frames):\n";
  for (IcrcStatus st : kIcrcOrder)
    if (icrc_count(st)) s += line(proto::to_string(st), icrc_count(st));
  return s;
}

std::string Summary::json(bool complete) const {
  JsonWriter w;
  w.begin_object();
  w.field("frames", frames_);
  w.field("complete", complete);
  w.key("verdicts").begin_object();
  for (Verdict v : kVerdictOrder) w.field(capture::to_string(v), verdict_count(v));
  w.end_object();
  w.key("reasons").begin_object();
  for (std::size_t e = 0; e < reasons_.size(); ++e)
    if (reasons_[e]) w.field(proto::to_string(static_cast<ParseError>(e)), reasons_[e]);
  w.end_object();
  w.key("opcodes").begin_array();
  for (std::size_t op = 0; op < opcodes_.size(); ++op) {
    if (!opcodes_[op]) continue;
    w.begin_object();
    w.field("opcode", static_cast<std::uint64_t>(op));
    w.field("name", proto::opcode_name(static_cast<std::uint8_t>(op)));
    w.field("count", opcodes_[op]);
    w.end_object();
  }
  w.end_array();
  w.key("icrc").begin_object();
  for (IcrcStatus st : kIcrcOrder) w.field(proto::to_string(st), icrc_count(st));
  w.end_object();
  w.end_object();
  return w.str();
}

}  // namespace roce::inspect
