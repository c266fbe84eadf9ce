// The golden replay scenarios: for each, the scenario file, the frames the peer sends, and the
// frames the spec says our engine answers with. scripts/make_replay_goldens.sh writes them to
// pcap/replay/; tests/apps/replay checks the committed files are exactly these and that the
// engine (plain and on the DPDK net_pcap path) reproduces every expected frame.
#pragma once

#include <string>
#include <vector>

#include "apps/replay_goldens/wire.hpp"

namespace roce::goldens {

struct GoldenCase {
  std::string name;      // file stem in pcap/replay/
  std::string pins;      // one sentence: the behaviour the golden pins down
  std::string scenario;  // the scenario file's text
  Exchange frames;
};

std::vector<GoldenCase> golden_cases();

}  // namespace roce::goldens
