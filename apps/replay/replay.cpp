#include "apps/replay/replay.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <ostream>

#include "apps/replay/derive.hpp"
#include "apps/replay/dpdk_run.hpp"
#include "apps/replay/engine_run.hpp"

namespace roce::replay {

namespace {

// A scratch file for net_pcap's tx_pcap when the caller wants no output file.
class ScratchFile {
 public:
  ScratchFile() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "roce-replay-XXXXXX").string();
    if (::mkdtemp(tmpl.data())) dir_ = tmpl;
  }
  ~ScratchFile() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const char* name = "sent.pcap") const { return dir_.empty() ? std::string() : (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

std::vector<std::string> check_counters(const Scenario& s, const CounterSnapshot& got) {
  std::vector<std::string> out;
  for (const auto& [name, want] : s.expect) {
    const auto it = got.find(name);
    const std::uint64_t have = it == got.end() ? 0 : it->second;
    if (have != want) out.push_back(name + ": expected " + std::to_string(want) + ", got " + std::to_string(have));
  }
  return out;
}

}  // namespace

ReplayReport replay(const ReplayOptions& o, std::ostream& out, std::ostream& err) {
  ReplayReport rep;
  auto fail = [&](const std::string& msg) -> ReplayReport& {
    err << "roce-replay: " << msg << "\n";
    rep.exit_code = kExitError;
    return rep;
  };
  auto input = read_frames(o.input);
  if (!input) return fail(input.error().message);

  Scenario scenario;
  std::vector<Frame> expected;
  std::string expected_name;
  std::vector<CaptureGap> gaps;
  std::string dpdk_input = o.input;
  ScratchFile fed_file;  // with --dpdk, the capture less the frames --derive leaves out
  if (o.derive) {
    DeriveOptions d;
    d.responder_ip = o.responder_ip;
    auto derived = derive_scenario(*input, d, o.input);
    if (!derived) return fail(derived.error().message);
    scenario = std::move(derived->scenario);
    for (const std::string& note : derived->notes) out << "derive: " << note << "\n";
    gaps = derived->gaps;
    if (!derived->skipped_frames.empty()) {
      *input = without_frames(*input, derived->skipped_frames);
      if (o.dpdk) {
        dpdk_input = fed_file.path("fed.pcap");
        if (Status st = write_frames(dpdk_input, *input); !st) return fail(st.error().message);
      }
    }
    if (o.expect.empty()) {
      expected = std::move(derived->expected);
      expected_name = "the real responder's " + std::to_string(expected.size()) + " frames in " + o.input;
    }
  } else {
    if (o.scenario.empty()) return fail("give --scenario FILE or --derive");
    auto loaded = load_scenario(o.scenario);
    if (!loaded) return fail(loaded.error().message);
    scenario = std::move(*loaded);
  }
  if (o.max_diffs) scenario.compare.max_diffs = *o.max_diffs;
  if (o.ignore_timing || o.dpdk) scenario.compare.timing = false;
  if (!o.dump_scenario.empty()) {
    std::ofstream f(o.dump_scenario);
    f << "# scenario used to replay " << o.input << "\n" << to_text(scenario);
    if (!f) return fail(o.dump_scenario + ": cannot write the scenario");
  }
  if (!o.expect.empty()) {
    auto golden = read_frames(o.expect);
    if (!golden) return fail(golden.error().message);
    expected = std::move(*golden);
    expected_name = o.expect;
  }

  Result<RunResult> run = make_error(EINVAL, "not run");
  if (o.dpdk) {
    ScratchFile scratch;
    DpdkRunOptions d;
    d.eal_args = o.eal_args;
    d.input = dpdk_input;
    d.output = o.output.empty() ? scratch.path() : o.output;
    if (d.output.empty()) return fail("cannot make a scratch directory for net_pcap's output");
    run = run_on_dpdk(scenario, *input, d);
  } else {
    run = run_on_engine(scenario, *input);
    if (run && !o.output.empty())
      if (Status st = write_frames(o.output, run->sent); !st) return fail(st.error().message);
  }
  if (!run) return fail(run.error().message);
  rep.run = std::move(*run);

  out << "replayed " << o.input << " on " << (o.dpdk ? "the DPDK dataplane (net_pcap)" : "the engine") << ": "
      << rep.run.frames_in << " frames in, " << rep.run.sent.size() << " sent";
  if (rep.run.keys_mapped || rep.run.keys_unmapped)
    out << "; R_Keys translated in " << rep.run.keys_mapped << " requests, " << rep.run.keys_unmapped << " undeclared";
  out << "\n";
  if (o.verbose)
    for (const auto& [name, v] : rep.run.counters)
      if (v) out << "  " << name << " = " << v << "\n";

  rep.counter_mismatches = check_counters(scenario, rep.run.counters);
  bool pass = rep.counter_mismatches.empty();
  if (!scenario.expect.empty()) {
    if (pass) out << "PASS: the " << scenario.expect.size() << " counters in [expect] agree\n";
    else out << "FAIL: counters differ from [expect]:\n";
    for (const std::string& m : rep.counter_mismatches) out << "  " << m << "\n";
  }
  if (!expected_name.empty()) {
    const Nanos start = start_time(scenario.start, *input);
    rep.comparison = compare_frames(expected, rep.run.sent, scenario.compare, Origins{start, o.dpdk ? rep.run.start : start});
    explain_by_gaps(*rep.comparison, gaps);
    out << format_comparison(*rep.comparison, expected_name);
    pass = pass && (rep.comparison->pass() || rep.comparison->pass_but_for_gaps());
  }
  rep.exit_code = pass ? kExitPass : kExitMismatch;
  return rep;
}

}  // namespace roce::replay
