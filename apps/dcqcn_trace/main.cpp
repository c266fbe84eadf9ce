// dcqcn-trace: replays CNP and sent-bytes events through one DCQCN reaction point and prints
// the rate state after every change. Start-up only: options and the line loop; the work is in
// trace_runner.cpp.
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <cxxopts.hpp>

#include "apps/dcqcn_trace/params_from_options.hpp"
#include "apps/dcqcn_trace/trace_events.hpp"
#include "apps/dcqcn_trace/trace_runner.hpp"
#include "client/cli.hpp"

namespace {

constexpr const char* kIntro =
    "Replays DCQCN reaction-point events (one QP) and prints the rate state after every change.\n"
    "\n"
    "Input, on stdin, one event per line; times are whole microseconds and must not decrease:\n"
    "  <t> cnp            a CNP for this QP arrives at t\n"
    "  <t> sent <bytes>   the QP put <bytes> wire bytes on the link at t (feeds the byte counter)\n"
    "  <t> end            run the timers up to t and stop\n"
    "Blank lines and lines starting with '#' are ignored.\n"
    "\n"
    "Output, on stdout, one CSV line per state change:\n"
    "  t_us,event,rc_gbps,rt_gbps,alpha\n"
    "event is cnp, alpha (alpha timer), inc_timer (rate-increase timer), bytes (byte-counter\n"
    "increase) or, for --profile mlx|hpcc only, rate_dec (the periodic decrease check that cut).\n"
    "Timers are printed at their own deadline. Before an event at t every timer due at or before\n"
    "t fires, in deadline order; a CNP at t comes before timers due exactly at t. Timers with the\n"
    "same deadline print in the order alpha, rate_dec, inc_timer. Before the first CNP no timers\n"
    "run and sent bytes are not counted. Numbers are the shortest decimals that read back exactly.\n"
    "\n"
    "Profiles (docs/dcqcn.md): paper = SIGCOMM'15 constants (g 1/256, K = T = 55 us, B = 10 MB,\n"
    "F 5, R_AI 40 Mb/s, R_HAI 200 Mb/s); mlx = NVIDIA firmware fixed point; hpcc = HPCC ns-3\n"
    "run.py dcqcn. The options below override the profile's value; for mlx and hpcc each\n"
    "option says which knob it sets. --g and --f may also be written -g and -f.\n"
    "\n"
    "Exit status: 0 every line was replayed; 2 a bad option or input line (one line on stderr\n"
    "names it; the CSV printed before it stands).\n"
    "\n"
    "Example (the spec's T1/T2):\n"
    "  printf '0 cnp\\n550 end\\n' | dcqcn-trace --rmin-mbps 0\n";

// cxxopts takes one-letter options only as -g/-f; the documented spelling is --g/--f.
std::vector<std::string> normalise_args(int argc, char** argv) {
  std::vector<std::string> out(argv, argv + argc);
  for (std::string& a : out) {
    for (const char* name : {"g", "f"}) {
      const std::string lng = std::string("--") + name;
      if (a == lng) a = std::string("-") + name;
      else if (a.rfind(lng + "=", 0) == 0) a = std::string("-") + name + a.substr(lng.size() + 1);
    }
  }
  return out;
}

int fail_usage(const std::string& msg) {
  return roce::client::report_error("dcqcn-trace", msg + " (see --help)", roce::client::kExitUsage);
}

int run(int argc, char** argv) {
  cxxopts::Options options("dcqcn-trace", kIntro);
  options.set_width(100);
  roce::trace::add_param_options(options);
  options.add_options("Output")("header", "print the CSV header line first")("h,help", "show this help");

  auto parsed = roce::client::parse_cli(options, normalise_args(argc, argv));
  if (!parsed) return fail_usage(parsed.error().message);
  const cxxopts::ParseResult& args = *parsed;
  if (args.count("help")) {
    std::cout << options.help({"", "DCQCN parameters", "Output"});
    return 0;
  }
  if (!args.unmatched().empty()) return fail_usage("unexpected argument '" + args.unmatched().front() + "'");

  std::string err;
  const std::optional<roce::cc::RpParams> params = roce::trace::params_from_options(args, err);
  if (!params) return fail_usage(err);

  if (args.count("header")) std::cout << "t_us,event,rc_gbps,rt_gbps,alpha\n";
  roce::trace::TraceRunner runner(*params, std::cout);
  std::string line;
  for (std::size_t number = 1; std::getline(std::cin, line); ++number) {
    const roce::trace::ParsedLine p = roce::trace::parse_line(line);
    if (p.status == roce::trace::LineStatus::Skip) continue;
    std::optional<std::string> problem;
    if (p.status == roce::trace::LineStatus::Error) problem = p.error;
    else problem = runner.apply(p.event);
    if (problem) {
      std::cout.flush();
      std::cerr << "dcqcn-trace: line " << number << ": " << *problem << '\n';
      return roce::client::kExitUsage;  // bad input, like a bad option
    }
  }
  std::cout.flush();
  return std::cout ? roce::client::kExitOk : roce::client::kExitFailed;
}

}  // namespace

int main(int argc, char** argv) {
  return roce::client::guarded_main("dcqcn-trace", [&] { return run(argc, argv); });
}
