// Whole capture files in one call, for tests that exchange frames with other tools (scapy,
// tshark), read the shared captures or check what a PMD wrote: capture/'s reader and writer
// underneath, so the tests read pcap and pcapng as the tools do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "capture/capture_reader.hpp"
#include "capture/capture_writer.hpp"

namespace roce::test {

struct CapturedFrame {
  std::vector<std::byte> data;  // the captured bytes (caplen)
  std::size_t wire_length = 0;  // the original length
  std::int64_t ts_ns = 0;
};

struct CaptureContents {
  std::string error;  // empty when the whole file was read
  capture::LinkType link = capture::LinkType::Ethernet;
  std::vector<CapturedFrame> records;  // the records before an error stay
};

inline CaptureContents read_capture(const std::string& path) {
  CaptureContents out;
  capture::CaptureReader r;
  if (!r.open(path)) {
    out.error = r.error();
    return out;
  }
  out.link = r.link_type();
  capture::CaptureRecord rec;
  capture::ReadStatus s;
  while ((s = r.next(rec)) == capture::ReadStatus::Record)
    out.records.push_back({{rec.data.begin(), rec.data.end()}, rec.wire_len, rec.ts_sec * 1'000'000'000 + rec.ts_nsec});
  if (s == capture::ReadStatus::Error) out.error = r.error();
  return out;
}

// Frames 10 us apart from a fixed start, so the file is the same on every run; "" or the error.
inline std::string write_capture(const std::string& path, const std::vector<std::vector<std::byte>>& frames,
                                 capture::LinkType link = capture::LinkType::Ethernet) {
  capture::CaptureWriter w;
  if (!w.open(path, link, 262144)) return w.error();
  std::int64_t usec = 0;
  for (const auto& f : frames) {
    if (!w.write(1'700'000'000 + usec / 1'000'000, static_cast<std::uint32_t>(usec % 1'000'000), f)) return w.error();
    usec += 10;
  }
  return w.close() ? std::string() : w.error();
}

// A simulator's capture of what it put on its links (for opening a failing test's traffic in
// Wireshark): frames cut to `snaplen` bytes. A path that cannot be written fails the test.
inline std::unique_ptr<capture::CaptureWriter> open_sim_capture(const std::string& path, std::uint32_t snaplen = 65535) {
  auto w = std::make_unique<capture::CaptureWriter>();
  if (!w->open(path, capture::LinkType::Ethernet, snaplen)) throw std::runtime_error("capture " + path + ": " + w->error());
  return w;
}

// `frame` at `time_ns` of the simulator's clock; a write that fails fails the test.
inline void write_sim_frame(capture::CaptureWriter& w, std::span<const std::byte> frame, std::int64_t time_ns) {
  if (!w.write_ns(time_ns / 1'000'000'000, static_cast<std::uint32_t>(time_ns % 1'000'000'000), frame))
    throw std::runtime_error("capture: " + w.error());
}

}  // namespace roce::test
