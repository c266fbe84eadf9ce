// A short RC exchange between two hosts, built with protocol/builder: an RDMA WRITE of three
// packets and its ACK, a one-packet WRITE that a switch marked CE followed by the receiver's
// CNP and ACK, and an RDMA READ of three response packets. It is the project's own demo
// capture (pcap/demo_write_read.pcap) and test input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/be.hpp"

namespace roce::demo {

struct DemoFrame {
  std::string what;  // one line saying what the frame is, for the generator's log
  std::vector<std::byte> bytes;
};

inline constexpr std::uint32_t kDemoPmtu = 1024;
inline constexpr std::int64_t kDemoStartSec = 1'700'000'000;  // fixed, so the file is reproducible
inline constexpr std::uint32_t kDemoGapUsec = 10;

std::vector<DemoFrame> demo_exchange();

}  // namespace roce::demo
