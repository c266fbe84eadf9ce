#include "apps/inspect/json_output.hpp"

#include <cinttypes>
#include <cstdio>

#include "lib/util/json_writer.hpp"

namespace roce::inspect {

std::string frame_json(const FrameView& v) {
  JsonWriter w;
  w.begin_object();
  w.field("frame", v.index);
  w.field("verdict", capture::to_string(v.verdict));
  w.field("reason", v.reason());
  w.field("caplen", v.caplen);
  w.field("len", v.wire_len);
  if (v.bth) {
    const BthView& b = *v.bth;
    w.field("opcode", b.opcode);
    w.field("opcode_name", b.opcode_name);
    w.field("dest_qp", b.dest_qp);
    w.field("psn", b.psn);
    w.field("ecn", proto::to_string(b.ecn));
    w.field("fecn", b.fecn);
    w.field("becn", b.becn);
    w.field("ack_req", b.ack_req);
    w.field("udp_sport", b.udp_src_port);
  }
  if (v.aeth) {
    w.key("aeth").begin_object();
    w.field("syndrome", v.aeth->syndrome);
    w.field("meaning", v.aeth->meaning);
    w.field("msn", v.aeth->msn);
    w.end_object();
  }
  if (v.reth) {
    // A 64-bit VA does not survive JSON parsers that read numbers as doubles: write it as hex.
    char va[24];
    std::snprintf(va, sizeof va, "0x%016" PRIx64, v.reth->va);
    w.key("reth").begin_object();
    w.field("va", va);
    w.field("rkey", v.reth->rkey);
    w.field("dma_length", v.reth->dma_length);
    w.end_object();
  }
  if (v.payload_length) w.field("payload_length", *v.payload_length);
  if (v.icrc) w.field("icrc", proto::to_string(*v.icrc));
  w.end_object();
  return w.str();
}

}  // namespace roce::inspect
