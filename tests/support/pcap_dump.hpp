// Writes frames to a pcap file (Ethernet link type) so a failing test's traffic can be
// opened in Wireshark.
#pragma once

#include <pcap/pcap.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>

namespace roce::test {

class PcapDump {
 public:
  explicit PcapDump(const std::string& path) {
    dead_ = pcap_open_dead(DLT_EN10MB, 65535);
    if (dead_) dumper_ = pcap_dump_open(dead_, path.c_str());
  }
  ~PcapDump() {
    if (dumper_) pcap_dump_close(dumper_);
    if (dead_) pcap_close(dead_);
  }
  PcapDump(const PcapDump&) = delete;
  PcapDump& operator=(const PcapDump&) = delete;

  bool ok() const { return dumper_ != nullptr; }
  // `frame` may be the first part of a longer frame of `wire_length` bytes (a snap length).
  void write(std::span<const std::byte> frame, std::int64_t time_ns, std::size_t wire_length = 0) {
    if (!dumper_) return;
    pcap_pkthdr h{};
    h.ts.tv_sec = static_cast<time_t>(time_ns / 1'000'000'000);
    h.ts.tv_usec = static_cast<suseconds_t>((time_ns % 1'000'000'000) / 1000);
    h.caplen = static_cast<bpf_u_int32>(frame.size());
    h.len = static_cast<bpf_u_int32>(std::max(frame.size(), wire_length));
    pcap_dump(reinterpret_cast<u_char*>(dumper_), &h, reinterpret_cast<const u_char*>(frame.data()));
  }

 private:
  pcap_t* dead_ = nullptr;
  pcap_dumper_t* dumper_ = nullptr;
};

}  // namespace roce::test
