#include "apps/inspect/frame_view.hpp"

#include "protocol/aeth.hpp"

namespace roce::inspect {

FrameView make_frame_view(const capture::CaptureRecord& rec, const capture::DecodedFrame& frame) {
  FrameView v;
  v.index = rec.index;
  v.caplen = rec.caplen;
  v.wire_len = rec.wire_len;
  v.verdict = frame.verdict;
  v.error = frame.error;
  const proto::Packet& p = frame.packet;
  if (capture::bth_decoded(frame.error)) {
    v.bth = BthView{p.bth.opcode, proto::opcode_name(p.bth.opcode), p.dest_qp(), p.psn(), p.ecn(),
                    p.bth.fecn(), p.bth.becn(), p.bth.ack_requested(), p.udp_src_port};
  }
  if (frame.error != proto::ParseError::None || !p.info) return v;
  if (p.info->has(proto::ExtHeader::Aeth)) {
    const proto::Syndrome s{p.ext.aeth.syndrome};
    v.aeth = AethView{s.raw, proto::to_string(s), p.ext.aeth.msn.get()};
  }
  if (p.info->has(proto::ExtHeader::Reth))
    v.reth = RethView{p.ext.reth.va.get(), p.ext.reth.rkey.get(), p.ext.reth.dma_length.get()};
  v.payload_length = p.payload_length;
  v.icrc = p.icrc_status;
  return v;
}

}  // namespace roce::inspect
