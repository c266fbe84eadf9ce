// roce-inspect: option handling only; the work is in inspect.cpp.
#include <cxxopts.hpp>

#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "apps/inspect/inspect.hpp"
#include "protocol/mtu.hpp"

namespace {

constexpr const char* kDescription =
    "Decodes the RoCEv2 traffic in a capture file (pcap or pcapng, as written by tcpdump,\n"
    "tshark or Wireshark) and prints one line per frame: verdict, BTH fields, AETH/RETH,\n"
    "payload length and whether the ICRC is correct.\n";

constexpr const char* kVerdicts = R"(
Link types: Ethernet, Linux cooked (SLL, SLL2: tcpdump -i any), raw IP.

Verdict of each frame:
  roce       a RoCEv2 packet (UDP port 4791) that decodes cleanly
  rocev1     EtherType 0x8915 (RoCEv1); not decoded further
  not-roce   other traffic (ARP, TCP, UDP to other ports...); Reason says why
  malformed  looks like RoCEv2 but breaks a rule (Reason names it), or is cut inside a header
)";

constexpr const char* kColumns = R"(
Columns: DestQP and PSN are the BTH fields in hex; ECN is the IP ECN codepoint
(not-ect, ect0, ect1, ce); FECN/BECN/Ack are BTH bits (CNPs carry BECN=1); Payload is the
payload length without pad; ICRC is ok, bad, or not-checkable (frame cut by the snap length).
Details show the AETH (syndrome, credits or NAK code, MSN) and RETH (VA, R_Key, DMA length).

Exit status: 0 the whole file was read; 1 the file ends in the middle of a record (frames
before that are still printed); 2 bad command line, or a file that is missing, unreadable, not
a capture or of an unsupported link type.

Examples:
  roce-inspect trace.pcap
  roce-inspect trace.pcapng --summary
  roce-inspect trace.pcap --json | jq 'select(.verdict=="malformed")'
)";

// The reason names come from the parser, so this list cannot drift from what is printed.
std::string reasons_text() {
  std::string s = "\nReasons:";
  std::size_t line = s.size() - 1;
  for (int i = 0; i < static_cast<int>(roce::proto::ParseError::Count); ++i) {
    const std::string r = roce::proto::to_string(static_cast<roce::proto::ParseError>(i));
    if (line + r.size() + 1 > 90) {
      s += "\n ";
      line = 1;
    }
    s += " " + r;
    line += r.size() + 1;
  }
  return s + "\n";
}

struct Usage {
  roce::inspect::InspectOptions opts;
  bool help = false;
  std::string error;
  std::string help_text;
};

Usage parse_command_line(int argc, char** argv) {
  Usage u;
  cxxopts::Options options("roce-inspect", kDescription);
  options.custom_help("[--json] [--summary] [--pmtu N] [--crc isal|zlib|portable]");
  options.positional_help("FILE.pcap|FILE.pcapng");
  options.add_options()
      ("j,json", "one JSON object per frame, one per line (JSON Lines); with --summary, the summary as one JSON object")
      ("s,summary", "print only counts: per verdict, per reason, per opcode, per ICRC status")
      ("pmtu", "path MTU in payload bytes (256, 512, 1024, 2048, 4096): FIRST/MIDDLE packets must carry exactly "
               "this much; 0 = unknown, any IBA size accepted",
       cxxopts::value<std::string>()->default_value("0"), "N")
      ("crc", "CRC-32 implementation used to check the ICRC: isal, zlib or portable",
       cxxopts::value<std::string>()->default_value("isal"), "NAME")
      ("h,help", "show this help")
      ("file", "capture file", cxxopts::value<std::vector<std::string>>());
  options.parse_positional({"file"});
  options.set_width(100);
  u.help_text = options.help() + kVerdicts + reasons_text() + kColumns;
  try {
    const auto r = options.parse(argc, argv);
    if (r.count("help")) {
      u.help = true;
      return u;
    }
    u.opts.json = r.count("json") > 0;
    u.opts.summary = r.count("summary") > 0;

    const std::string crc = r["crc"].as<std::string>();
    const auto backend = roce::proto::crc_backend_from_string(crc);
    if (!backend) {
      u.error = "--crc: unknown CRC implementation '" + crc + "' (use isal, zlib or portable)";
      return u;
    }
    u.opts.parse.crc = *backend;

    const std::string pmtu = r["pmtu"].as<std::string>();
    std::size_t used = 0;
    unsigned long n = 0;
    try {
      n = std::stoul(pmtu, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != pmtu.size() || (n != 0 && !roce::proto::mtu_from_bytes(static_cast<std::uint32_t>(n)))) {
      u.error = "--pmtu: '" + pmtu + "' is not 0, 256, 512, 1024, 2048 or 4096";
      return u;
    }
    u.opts.parse.pmtu = static_cast<std::uint32_t>(n);

    if (!r.count("file")) {
      u.error = "no capture file given (try --help)";
      return u;
    }
    const auto& files = r["file"].as<std::vector<std::string>>();
    if (files.size() != 1) {
      u.error = "expected one capture file, got " + std::to_string(files.size());
      return u;
    }
    u.opts.path = files.front();
  } catch (const std::exception& e) {
    u.error = e.what();
  }
  return u;
}

}  // namespace

int main(int argc, char** argv) {
  const Usage u = parse_command_line(argc, argv);
  if (u.help) {
    std::cout << u.help_text;
    return roce::inspect::kExitOk;
  }
  if (!u.error.empty()) {
    std::cerr << "roce-inspect: " << u.error << '\n';
    return roce::inspect::kExitUsage;
  }
  return roce::inspect::run_inspect(u.opts, std::cout, std::cerr);
}
