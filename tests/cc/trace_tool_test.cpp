// Runs the built dcqcn-trace on the spec's T1-T6 event files (tests/cc/traces, written by
// make_traces.py) and compares with the expected CSV at 1e-12 relative; checks the spec's table
// values directly too, and that bad input is refused with the line number.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>
#include <sys/wait.h>

#include "tests/cc/rel_near.hpp"

namespace roce::cc {
namespace {

namespace fs = std::filesystem;

struct ToolRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const char* env_or_null(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// Runs dcqcn-trace with `args` on `input` through the shell, capturing stdout and stderr.
ToolRun run_tool(const std::string& args, const std::string& input) {
  const fs::path dir = fs::temp_directory_path() / ("dcqcn_trace_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "in") << input;
  const std::string cmd = std::string("'") + env_or_null("DCQCN_TRACE_BIN") + "' " + args + " < '" +
                          (dir / "in").string() + "' > '" + (dir / "out").string() + "' 2> '" +
                          (dir / "err").string() + "'";
  const int status = std::system(cmd.c_str());
  ToolRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  fs::remove_all(dir);
  return r;
}

struct Row {
  std::string t_us;
  std::string event;
  double rc = 0, rt = 0, alpha = 0;
};

std::vector<Row> parse_csv(const std::string& text) {
  std::vector<Row> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::istringstream ls(line);
    std::string field;
    while (std::getline(ls, field, ',')) f.push_back(field);
    EXPECT_EQ(f.size(), 5u) << line;
    if (f.size() != 5) continue;
    rows.push_back({f[0], f[1], std::stod(f[2]), std::stod(f[3]), std::stod(f[4])});
  }
  return rows;
}

class TraceTool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!env_or_null("DCQCN_TRACE_BIN") || !env_or_null("CC_TRACES_DIR"))
      GTEST_SKIP() << "DCQCN_TRACE_BIN and CC_TRACES_DIR are set by meson test; run through meson";
  }

  // The options are on the event file's first line: `# dcqcn-trace <options>`.
  std::vector<Row> run_case(const std::string& name) {
    const fs::path dir = env_or_null("CC_TRACES_DIR");
    const std::string events = slurp(dir / (name + ".events"));
    const std::string first = events.substr(0, events.find('\n'));
    const std::string prefix = "# dcqcn-trace ";
    EXPECT_EQ(first.rfind(prefix, 0), 0u) << name << ": first line must carry the options";
    const ToolRun r = run_tool(first.substr(prefix.size()), events);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::vector<Row> got = parse_csv(r.out);
    const std::vector<Row> want = parse_csv(slurp(dir / (name + ".expected.csv")));
    EXPECT_EQ(got.size(), want.size()) << name;
    for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
      SCOPED_TRACE(name + " line " + std::to_string(i + 1));
      EXPECT_EQ(got[i].t_us, want[i].t_us);
      EXPECT_EQ(got[i].event, want[i].event);
      EXPECT_REL(got[i].rc, want[i].rc);
      EXPECT_REL(got[i].rt, want[i].rt);
      EXPECT_REL(got[i].alpha, want[i].alpha);
    }
    return got;
  }
};

const Row* find(const std::vector<Row>& rows, const std::string& t, const std::string& event) {
  for (const Row& r : rows)
    if (r.t_us == t && r.event == event) return &r;
  return nullptr;
}

TEST_F(TraceTool, T1OneCnpHalvesTheRate) {
  const auto rows = run_case("t1");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].event, "cnp");
  EXPECT_EQ(rows[0].rc, 50.0);
  EXPECT_EQ(rows[0].rt, 100.0);
  EXPECT_EQ(rows[0].alpha, 1.0);
}

TEST_F(TraceTool, T2TimerRecovery) {
  const auto rows = run_case("t2");
  const double rc[] = {75, 87.5, 93.75, 96.875, 98.4375, 99.21875, 99.609375};
  for (int k = 1; k <= 7; ++k) {
    const Row* r = find(rows, std::to_string(55 * k), "inc_timer");
    ASSERT_NE(r, nullptr) << 55 * k;
    EXPECT_EQ(r->rc, rc[k - 1]);
    EXPECT_EQ(r->rt, 100.0);
  }
  const Row* last = find(rows, "550", "inc_timer");
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->rc, 99.951171875);
  EXPECT_REL(last->alpha, 0.96161704161642640);
  EXPECT_EQ(rows.back().t_us, "550") << "nothing fires between 550 and 560";
}

TEST_F(TraceTool, T3SecondCnpGivesAdditiveBelowLineRate) {
  const auto rows = run_case("t3");
  const Row* c2 = find(rows, "50", "cnp");
  ASSERT_NE(c2, nullptr);
  EXPECT_EQ(c2->rt, 50.0);
  EXPECT_EQ(c2->rc, 25.0);
  const Row* ai = find(rows, "490", "inc_timer");
  ASSERT_NE(ai, nullptr);
  EXPECT_REL(ai->rt, 50.12);
  EXPECT_REL(ai->rc, 49.98734375);
}

TEST_F(TraceTool, T4EventInjection) {
  const auto rows = run_case("t4");
  std::vector<std::pair<double, double>> steps;  // (Rt, Rc) after each increase
  for (const Row& r : rows)
    if (r.event == "inc_timer" || r.event == "bytes") steps.emplace_back(r.rt, r.rc);
  const std::vector<std::pair<double, double>> spec = {
      {50, 37.5},     {50, 43.75},       {50.04, 46.895},      {50.08, 48.4875},     {50.12, 49.30375},
      {50.32, 49.811875}, {50.52, 50.1659375}, {50.72, 50.44296875}, {51.12, 50.781484375}};
  ASSERT_EQ(steps.size(), spec.size());
  for (std::size_t i = 0; i < spec.size(); ++i) {
    EXPECT_REL(steps[i].first, spec[i].first) << "step " << i + 1;
    EXPECT_REL(steps[i].second, spec[i].second) << "step " << i + 1;
  }
}

TEST_F(TraceTool, T5CnpAfterAlphaDecay) {
  const auto rows = run_case("t5");
  const Row* c = find(rows, "560", "cnp");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->rt, 99.951171875);
  EXPECT_REL(c->rc, 51.89379677273377);
  EXPECT_REL(c->alpha, 0.9617669750476122);
  EXPECT_NE(find(rows, "615", "inc_timer"), nullptr) << "timers re-armed for 615";
}

// Packets are 1 us batches, so each byte-counter event is within 1 us of the fluid time.
TEST_F(TraceTool, T6ByteCounterOnlyRecovery) {
  const auto rows = run_case("t6");
  const double fluid[] = {1600, 2666.667, 3580.952, 4434.286, 5260.092, 6072.791};
  const double rc[] = {75, 87.5, 93.75, 96.875, 98.4375, 99.21875};
  std::size_t k = 0;
  for (const Row& r : rows) {
    EXPECT_NE(r.event, "inc_timer") << "T = inf";
    if (r.event != "bytes") continue;
    ASSERT_LT(k, 6u);
    EXPECT_NEAR(std::stod(r.t_us), fluid[k], 1.001) << "BC" << k + 1;
    EXPECT_EQ(r.rc, rc[k]);
    EXPECT_EQ(r.rt, 100.0);
    ++k;
  }
  EXPECT_EQ(k, 6u);
}

TEST_F(TraceTool, BadInputIsRefusedWithTheLineNumber) {
  struct Case {
    const char* input;
    const char* needle;
  };
  const Case cases[] = {
      {"0 cnp\n# comment\n\n5 jump\n", "line 4: unknown event 'jump'"},
      {"5 cnp\n3 cnp\n", "line 2: time 3 us is before the previous event at 5 us"},
      {"garbage\n", "line 1: time 'garbage'"},
      {"1 sent\n", "line 1: 'sent' needs a byte count"},
      {"1 sent 12x\n", "line 1: byte count '12x'"},
      {"1 cnp now\n", "line 1: unexpected 'now'"},
      {"1 end\n2 cnp\n", "line 2: event after 'end'"},
      {"1.5 cnp\n", "line 1: time '1.5'"},
  };
  for (const Case& c : cases) {
    const ToolRun r = run_tool("", c.input);
    EXPECT_NE(r.exit_code, 0) << c.input;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
  EXPECT_EQ(run_tool("--profile nope", "").exit_code, 2);
  EXPECT_EQ(run_tool("--profile hpcc --b-bytes 1000", "").exit_code, 2);
}

TEST_F(TraceTool, BeforeTheFirstCnpNothingHappens) {
  const ToolRun r = run_tool("", "0 sent 50000000\n1000 end\n");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
}

TEST_F(TraceTool, MlxAndHpccProfilesPrintTheirDecreaseChecks) {
  const ToolRun mlx = run_tool("--profile mlx", "0 cnp\n4 end\n");
  EXPECT_EQ(mlx.exit_code, 0) << mlx.err;
  EXPECT_NE(mlx.out.find("4,rate_dec,51.026,100,0.9794921875\n"), std::string::npos) << mlx.out;
  const ToolRun hpcc = run_tool("--profile hpcc", "0 cnp\n5 end\n");
  EXPECT_EQ(hpcc.exit_code, 0) << hpcc.err;
  const auto rows = parse_csv(hpcc.out);
  const Row* dec = find(rows, "4.001", "rate_dec");
  ASSERT_NE(dec, nullptr) << hpcc.out;
  EXPECT_REL(dec->rc, 50.77668427256867);
}

TEST_F(TraceTool, HelpExplainsTheFormats) {
  const ToolRun r = run_tool("--help", "");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"<t> cnp", "<t> sent <bytes>", "<t> end", "t_us,event,rc_gbps,rt_gbps,alpha", "--profile",
                        "--line-rate-gbps", "--k-us", "--t-us", "--b-bytes", "--rai-mbps", "--rhai-mbps", "--rmin-mbps"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

}  // namespace
}  // namespace roce::cc
