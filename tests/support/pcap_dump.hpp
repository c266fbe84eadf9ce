// Writes frames to a pcap file (Ethernet link type) so a failing test's traffic can be
// opened in Wireshark.
#pragma once

#include <pcap/pcap.h>

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
  void write(std::span<const std::byte> frame, std::int64_t time_ns) {
    if (!dumper_) return;
    pcap_pkthdr h{};
    h.ts.tv_sec = static_cast<time_t>(time_ns / 1'000'000'000);
    h.ts.tv_usec = static_cast<suseconds_t>((time_ns % 1'000'000'000) / 1000);
    h.caplen = h.len = static_cast<bpf_u_int32>(frame.size());
    pcap_dump(reinterpret_cast<u_char*>(dumper_), &h, reinterpret_cast<const u_char*>(frame.data()));
  }

 private:
  pcap_t* dead_ = nullptr;
  pcap_dumper_t* dumper_ = nullptr;
};

}  // namespace roce::test
