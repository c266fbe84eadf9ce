#include "apps/replay/frames.hpp"

#include "capture/capture_reader.hpp"
#include "capture/capture_writer.hpp"

namespace roce::replay {

Result<std::vector<Frame>> read_frames(const std::string& path) {
  capture::CaptureReader r;
  if (!r.open(path)) return make_error(EINVAL, path + ": " + r.error());
  if (r.link_type() != capture::LinkType::Ethernet)
    return make_error(EINVAL, path + ": link type " + capture::to_string(r.link_type()) +
                                  "; the replay needs Ethernet frames");
  std::vector<Frame> out;
  capture::CaptureRecord rec;
  capture::ReadStatus st;
  while ((st = r.next(rec)) == capture::ReadStatus::Record)
    out.push_back(Frame{rec.ts_sec * kSecond + rec.ts_nsec, {rec.data.begin(), rec.data.end()}, rec.index});
  if (st == capture::ReadStatus::Error)
    return make_error(EINVAL, path + ": after record " + std::to_string(r.records_read()) + ": " + r.error());
  return out;
}

Status write_frames(const std::string& path, const std::vector<Frame>& frames) {
  capture::CaptureWriter w;
  if (!w.open(path, capture::LinkType::Ethernet)) return make_error(EIO, path + ": " + w.error());
  for (const Frame& f : frames) {
    const Nanos t = f.ts < 0 ? 0 : f.ts;
    if (!w.write(t / kSecond, static_cast<std::uint32_t>(t % kSecond / 1000), f.bytes))
      return make_error(EIO, path + ": " + w.error());
  }
  if (!w.close()) return make_error(EIO, path + ": " + w.error());
  return {};
}

}  // namespace roce::replay
