// roce-inspect: option handling only; the work is in inspect.cpp.
#include <unistd.h>

#include <cxxopts.hpp>

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "apps/inspect/cm_mad_view.hpp"
#include "apps/inspect/inspect.hpp"
#include "apps/inspect/mad_hook.hpp"
#include "apps/inspect/nvme_capsule_view.hpp"
#include "client/cli.hpp"
#include "protocol/mtu.hpp"

namespace {

using namespace roce::inspect;

constexpr const char* kDescription =
    "Decodes the RoCE traffic in capture files (pcap or pcapng, as tcpdump, tshark or Wireshark\n"
    "write them) like tshark does for other protocols: one line per frame with every header\n"
    "decoded, a display filter, field output, JSON, per-QP and per-connection statistics, and a\n"
    "picture of the PSNs over time.\n";

constexpr const char* kVerdicts = R"(
Link types: Ethernet, Linux cooked (SLL, SLL2: tcpdump -i any), raw IP.

Verdict of each frame:
  roce       a RoCEv2 packet (UDP port 4791) that decodes cleanly
  dc         Mellanox/NVIDIA DC transport (opcodes 0x40-0x5f), decoded as Wireshark does
  rocev1     EtherType 0x8915 (IB GRH + BTH), decoded; Source/Destination are its GIDs
  not-roce   other traffic (ARP, TCP, UDP to other ports...); Reason says why
  malformed  looks like RoCE but breaks a rule (Reason names it), or is cut inside a header
Opcodes nobody defines are named by their range: RC_RESERVED_0x15, UD_RESERVED_0x60,
XRC_SEND_ONLY (XRC: named, not decoded), RESERVED_0xc0, VENDOR_0xe3 (0xe0-0xff).
)";

constexpr const char* kColumns = R"(
Columns: Time is seconds since the first frame and the capture's UTC date and time (-t picks
one); Sport is the UDP source port; DestQP (hex) and PSN are BTH fields; ECN is the IP ECN
codepoint; F B A are the BTH FECN, BECN (CNPs carry BECN=1) and AckReq bits; Payload is the
payload length without pad, "captured/length" when the snap length cut the frame; ICRC is ok,
bad, or not-checkable. Details show every extension header (DCT ETH, RDETH, DETH, RETH,
AtomicETH, AETH, AtomicAckETH, ImmDt, IETH), QP1 management datagrams, retransmissions
(a PSN the flow already carried; "duplicate" when the responder had acknowledged it) and
frames cut short ("IPv4 total length exceeds packet length" when the sniffer recorded the
cut length as the frame length, as tshark says it).

Display filter (-Y): fields compared with == != < <= > >= (or eq ne lt le gt ge), `in {a b}`,
joined with and/or/not (&& || !) and parentheses. A bare field is true when present (and, for
yes/no fields, yes). Values: numbers (10, 0x1f), opcode names, IP addresses or prefixes,
"text". Examples:
  -Y 'qpn == 0x11 and psn >= 100'       -Y 'nak or retransmission'
  -Y 'opcode == RC_ACKNOWLEDGE'         -Y 'ip.src == 10.0.0.0/24 and not icrc == ok'
  -Y 'ce or cnp'                        -Y 'opcode in {0x0c 0x0d 0x0f}'

Summary (--summary): counts per verdict, reason, opcode and ICRC status; per QP (traffic to
each destination QP) frames, bytes, retransmissions, NAKs, ECN CE marks and CNPs; per
connection (A's QP <-> B's QP, paired by the PSNs the responses carry) frames and bytes each
way, goodput and goodput per interval (--interval), retransmitted PSNs, duplicate requests,
ACKs and how many packets each covers (ACK coalescing), NAKs by syndrome with their PSNs,
ECN CE and CNPs, and the RTT from a request to the response that answers it (min, median,
max; retransmitted requests are left out, as in Karn's algorithm). With -Y only matching
frames are counted.

JSON (--json, -T json): one object per frame per line; keys are the field names below and each
has one type: "number" fields are JSON numbers (never above 32 bits), "hex64" fields are
strings "0x" + 16 hex digits (a double cannot hold 64 bits), "seconds" a number, "bool" true or
false, "flag" true when set and absent otherwise, "text" and "address" strings. Fields a frame
does not have are left out (never null). The summary's counters are JSON numbers.

Exit status: 0 every file was read; 1 a file ends in the middle of a record (frames before
that are still printed); 2 bad command line, or a file that is missing, unreadable, not a
capture or of an unsupported link type, or a --plot file that cannot be written.

Examples:
  roce-inspect trace.pcap
  roce-inspect trace.pcapng --summary --plot psn.svg
  roce-inspect a.pcap b.pcap -Y 'nak' -T fields -e frame -e ip.src -e qpn -e psn -e aeth.meaning
  roce-inspect trace.pcap --json | jq 'select(.icrc == "bad")'
  roce-inspect trace.pcap -e -c 20          (-e without -T fields: show MAC addresses too)
)";

// The field list for --help comes from the field table, so it cannot drift from what is printed.
std::string fields_text() {
  std::string s = "\nFields (for -Y, -T fields -e NAME and the JSON keys; tshark's names work too):\n";
  for (const FieldDef& f : all_fields()) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "  %-18s %-8s %s", f.name, to_string(f.type).c_str(), f.help);
    s += buf;
    const auto aliases = aliases_of(f);
    if (!aliases.empty()) {
      s += " (";
      for (std::size_t i = 0; i < aliases.size(); ++i) s += (i ? ", " : "") + aliases[i];
      s += ")";
    }
    s += "\n";
  }
  return s;
}

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
  InspectOptions opts;
  bool help = false;
  std::string error;
  std::string help_text;
};

// tshark's -e names a field (with -T fields); tcpdump's -e shows link-level addresses. Both
// readings are kept: with -T fields, -e takes a field name; otherwise a bare -e means --link.
// -E values are taken out here: cxxopts would split "separator=," at its comma.
struct Args {
  std::vector<std::string> args;
  std::vector<std::string> fields_options;  // -E values
  bool missing_e_value = false;
};

Args normalise_args(int argc, char** argv) {
  Args a;
  const std::vector<std::string> in(argv, argv + argc);
  bool fields_mode = false;
  for (std::size_t i = 1; i < in.size(); ++i)
    if ((in[i] == "-T" && i + 1 < in.size() && in[i + 1] == "fields") || in[i] == "-Tfields") fields_mode = true;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (i > 0 && in[i] == "-E") {
      if (i + 1 == in.size()) a.missing_e_value = true;
      else a.fields_options.push_back(in[++i]);
    } else if (i > 0 && in[i].rfind("-E", 0) == 0 && in[i].size() > 2) {
      a.fields_options.push_back(in[i].substr(2));
    } else {
      a.args.push_back(!fields_mode && i > 0 && in[i] == "-e" ? "--link" : in[i]);
    }
  }
  return a;
}

bool parse_seconds(const std::string& s, std::int64_t& ns) {
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != s.size() || !(v > 0) || v > 1e6) return false;
    ns = static_cast<std::int64_t>(v * 1e9 + 0.5);
    return ns > 0;
  } catch (const std::exception&) {
    return false;
  }
}

Usage parse_command_line(int argc, char** argv) {
  Usage u;
  cxxopts::Options options("roce-inspect", kDescription);
  options.custom_help("[-Y FILTER] [-c N] [-T text|fields|json] [-e FIELD...] [--summary] [--plot FILE.svg] [...]");
  options.positional_help("FILE.pcap|FILE.pcapng...");
  options.add_options()
      ("Y,display-filter", "show only frames that match FILTER (see below)", cxxopts::value<std::string>(), "FILTER")
      ("c,count", "stop after N frames shown", cxxopts::value<std::string>(), "N")
      ("T,output", "text (the table, default), fields (-e values) or json (JSON Lines)", cxxopts::value<std::string>(), "FORMAT")
      ("e,field", "with -T fields: a field to print (repeat); without: show MAC addresses (as tcpdump -e)",
       cxxopts::value<std::vector<std::string>>(), "FIELD")
      ("link", "show MAC addresses")
      ("E", "fields output: separator=CHAR (/t tab, /s space), header=y|n; repeatable", cxxopts::value<std::string>(), "OPT=VALUE")
      ("t", "time column: r (seconds since the first frame), ud (UTC date and time), e (epoch seconds); default both r and ud",
       cxxopts::value<std::string>(), "FORMAT")
      ("j,json", "one JSON object per frame, one per line (JSON Lines); with --summary, the summary as one JSON object")
      ("summary", "print counts and per-QP and per-connection statistics instead of the frames")
      ("interval", "summary: goodput per interval of this many seconds (default: a tenth of the capture)",
       cxxopts::value<std::string>(), "SECONDS")
      ("plot", "draw the request PSNs over time per QP, retransmissions and NAKs marked, into FILE.svg",
       cxxopts::value<std::string>(), "FILE.svg")
      ("m,mtu", "path MTU in payload bytes (256, 512, 1024, 2048, 4096): FIRST/MIDDLE packets must carry exactly "
               "this much; 0 = unknown, any IBA size accepted",
       cxxopts::value<std::string>()->default_value("0"), "N")
      ("crc", "CRC-32 implementation used to check the ICRC: isal, zlib or portable",
       cxxopts::value<std::string>()->default_value("isal"), "NAME")
      ("threads", "decoding threads (ICRC checks run in parallel batches); 1 = none; default: every core",
       cxxopts::value<std::string>(), "N")
      ("progress", "a progress line on stderr (default: when stderr is a terminal)")
      ("no-progress", "no progress line")
      ("h,help", "show this help")
      ("file", "capture file", cxxopts::value<std::vector<std::string>>());
  options.parse_positional({"file"});
  // Old spellings, kept for scripts and left out of the help: -s (-s is a size in the other
  // tools), --pmtu (--mtu everywhere).
  options.add_options("Aliases")
      ("s", "same as --summary")
      ("pmtu", "same as --mtu", cxxopts::value<std::string>(), "N");
  options.set_width(100);
  u.help_text = options.help({""}) + kVerdicts + reasons_text() + kColumns + fields_text();
  const Args args = normalise_args(argc, argv);
  auto parsed = roce::client::parse_cli(options, args.args);
  if (!parsed) {
    u.error = parsed.error().message;
    return u;
  }
  const cxxopts::ParseResult& r = *parsed;
  auto& o = u.opts;
  if (r.count("help")) {
    u.help = true;
    return u;
  }
  o.json = r.count("json") > 0;
  o.summary = r.count("summary") > 0 || r.count("s") > 0;
  o.output = o.summary ? Output::None : o.json ? Output::Json : Output::Table;
  if (r.count("output")) {
    const std::string t = r["output"].as<std::string>();
    if (t == "fields") o.output = Output::Fields;
    else if (t == "json") o.output = Output::Json;
    else if (t == "text") o.output = Output::Table;
    else {
      u.error = "-T: unknown format '" + t + "' (use text, fields or json; -T json writes JSON Lines)";
      return u;
    }
    if (o.summary) {
      u.error = "-T goes with the frames, --summary replaces them: give one of them";
      return u;
    }
  }
  if (r.count("field")) {
    for (const std::string& name : r["field"].as<std::vector<std::string>>()) {
      const FieldDef* f = find_field(name);
      if (!f) {
        const std::string near = suggest_fields(name);
        u.error = "-e: unknown field '" + name + "'" + (near.empty() ? " (roce-inspect --help lists the fields)" : " (did you mean: " + near + ")");
        return u;
      }
      o.fields.fields.push_back(f);
      o.field_names.push_back(name);
    }
  }
  if (o.output == Output::Fields && o.fields.fields.empty()) {
    u.error = "-T fields needs at least one -e FIELD (e.g. -e frame -e qpn -e psn)";
    return u;
  }
  o.table.link = r.count("link") > 0;
  if (args.missing_e_value) {
    u.error = "-E needs a value: separator=CHAR or header=y|n";
    return u;
  }
  {
    for (const std::string& e : args.fields_options) {
      if (e.rfind("separator=", 0) == 0) {
        std::string sep = e.substr(10);
        if (sep == "/t") sep = "\t";
        else if (sep == "/s") sep = " ";
        o.fields.separator = sep;
      } else if (e == "header=y" || e == "header=n") {
        o.fields.header = e == "header=y";
      } else {
        u.error = "-E: '" + e + "' (use separator=CHAR or header=y|n)";
        return u;
      }
    }
  }
  if (r.count("t")) {
    const std::string t = r["t"].as<std::string>();
    if (t == "r") o.table.time = TimeFormat::Relative;
    else if (t == "ud" || t == "u") o.table.time = TimeFormat::Utc;
    else if (t == "e") o.table.time = TimeFormat::Epoch;
    else if (t == "both") o.table.time = TimeFormat::Both;
    else {
      u.error = "-t: unknown time format '" + t + "' (use r, ud, e or both)";
      return u;
    }
  }
  if (r.count("display-filter")) {
    auto f = DisplayFilter::compile(r["display-filter"].as<std::string>());
    if (!f) {
      u.error = "-Y: " + f.error().message;
      return u;
    }
    o.filter = std::move(*f);
  }
  if (r.count("count")) {
    const std::string c = r["count"].as<std::string>();
    std::size_t used = 0;
    unsigned long long n = 0;
    try {
      n = std::stoull(c, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != c.size() || n == 0) {
      u.error = "-c: '" + c + "' is not a positive number of frames";
      return u;
    }
    o.count = n;
  }
  if (r.count("interval") && !parse_seconds(r["interval"].as<std::string>(), o.summary_options.interval_ns)) {
    u.error = "--interval: '" + r["interval"].as<std::string>() + "' is not a positive number of seconds";
    return u;
  }
  if (r.count("plot")) {
    o.plot_path = r["plot"].as<std::string>();
    const auto dot = o.plot_path.rfind('.');
    const std::string ext = dot == std::string::npos ? "" : o.plot_path.substr(dot);
    if (ext != ".svg") {
      u.error = "--plot: '" + o.plot_path + "': roce-inspect writes SVG (give FILE.svg; for PNG convert it, e.g. rsvg-convert -o psn.png psn.svg)";
      return u;
    }
    const auto slash = o.plot_path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : o.plot_path.substr(0, std::max<std::size_t>(slash, 1));
    if (::access(dir.c_str(), W_OK) != 0) {
      u.error = "--plot: cannot write into " + dir + " (give a path in a directory you can write)";
      return u;
    }
  }
  if (r.count("threads")) {
    const std::string t = r["threads"].as<std::string>();
    try {
      std::size_t used = 0;
      o.threads = std::stoi(t, &used);
      if (used != t.size() || o.threads < 1 || o.threads > 256) throw std::invalid_argument(t);
    } catch (const std::exception&) {
      u.error = "--threads: '" + t + "' is not a number of threads (1..256)";
      return u;
    }
  }
  o.progress = r.count("progress") ? true : r.count("no-progress") ? false : ::isatty(STDERR_FILENO) == 1;

  const std::string crc = r["crc"].as<std::string>();
  const auto backend = roce::proto::crc_backend_from_string(crc);
  if (!backend) {
    u.error = "--crc: unknown CRC implementation '" + crc + "' (use isal, zlib or portable)";
    return u;
  }
  o.parse.crc = *backend;

  if (r.count("mtu") && r.count("pmtu")) {
    u.error = "--pmtu is the old name of --mtu; give one of them";
    return u;
  }
  const char* mtu_name = r.count("pmtu") ? "pmtu" : "mtu";
  const std::string pmtu = r[mtu_name].as<std::string>();
  std::size_t used = 0;
  unsigned long n = 0;
  try {
    n = std::stoul(pmtu, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != pmtu.size() || (n != 0 && !roce::proto::mtu_from_bytes(static_cast<std::uint32_t>(n)))) {
    u.error = std::string("--") + mtu_name + ": '" + pmtu + "' is not 0, 256, 512, 1024, 2048 or 4096";
    return u;
  }
  o.parse.pmtu = static_cast<std::uint32_t>(n);

  if (!r.count("file")) {
    u.error = "no capture file given (try --help)";
    return u;
  }
  o.paths = r["file"].as<std::vector<std::string>>();
  if (!o.plot_path.empty() && o.paths.size() > 1) {
    u.error = "--plot draws one capture; give one file, or run once per file";
    return u;
  }
  return u;
}

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  roce::inspect::set_mad_describer(&roce::inspect::describe_cm_mad);
  roce::inspect::set_nvme_describer(&roce::inspect::describe_nvme_capsule);
  return roce::client::guarded_main("roce-inspect", [&] {
    const Usage u = parse_command_line(argc, argv);
    if (u.help) {
      std::cout << u.help_text;
      return kExitOk;
    }
    if (!u.error.empty()) {
      std::cerr << "roce-inspect: " << u.error << '\n';
      return kExitUsage;
    }
    return run_inspect(u.opts, std::cout, std::cerr);
  });
}
