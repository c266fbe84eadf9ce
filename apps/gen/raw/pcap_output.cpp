#include "apps/gen/raw/pcap_output.hpp"

#include <vector>

#include "capture/capture_writer.hpp"
#include "apps/gen/raw/stream_clock.hpp"

namespace roce::gen {

Result<CraftStats> write_pcap(RawFrameGenerator& gen, const PcapOutput& out) {
  if (auto e = check(out.rate)) return make_error(EINVAL, *e);
  capture::CaptureWriter w;
  if (!w.open(out.path, capture::LinkType::Ethernet, 65535, capture::TimestampPrecision::Nano))
    return make_error(EACCES, "cannot write " + out.path + ": " + w.error());
  std::vector<std::byte> buf(gen.max_frame_bytes());
  StreamClock clock(out.rate);
  CraftStats stats;
  for (std::uint64_t i = 0; i < out.count; ++i) {
    const Nanos at = clock.next_departure();
    const CraftedFrame f = gen.next(buf);
    const std::int64_t t = out.start_ns + at;
    if (!w.write_ns(t / kSecond, static_cast<std::uint32_t>(t % kSecond), {buf.data(), f.length}))
      return make_error(EIO, "cannot write " + out.path + ": " + w.error());
    clock.on_sent(f.length);
    stats.count(f, at);
  }
  if (!w.close()) return make_error(EIO, "cannot write " + out.path + ": " + w.error());
  return stats;
}

}  // namespace roce::gen
