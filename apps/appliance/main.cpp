// roce-appliance: start-up and wiring only (apps/appliance/appliance.cpp does the work).
#include <cstdio>
#include <fstream>
#include <iostream>

#include "apps/appliance/options.hpp"

using namespace roce;
using namespace roce::client;

namespace {
int fail(const std::string& why, int code = 1) {
  std::fprintf(stderr, "roce-appliance: %s\n", why.c_str());
  return code;
}
}  // namespace

int appliance_main(int argc, char** argv) {
  const dp::SplitArgs split = dp::split_args(argc, argv, default_eal_args("roce-appliance"));
  auto cli = parse_appliance_options(split.app);
  if (!cli) return fail(cli.error().message + " (try --help)", 2);
  if (cli->help) {
    std::cout << cli->help_text;
    return 0;
  }
  const ApplianceOptions& o = cli->options;
  // Exit status 2: the command line (DPDK's part included) asks for something that cannot be:
  // a bad option, a port that is not there, a path or TCP port that cannot be used.
  ToolEal tool_eal;
  if (int rc = tool_eal.start(split.eal, o.vdevs, fail)) return rc;

  dp::DataplaneOptions dopt;
  dopt.name = "appliance";
  dopt.port.name = o.dev;
  dopt.ip = o.ip;
  dopt.workers = o.workers;
  dopt.mode = o.workers > 1 ? dp::Mode::Pipeline : dp::Mode::RunToCompletion;
  dopt.max_mrs = o.max_mrs;
  dopt.engine.max_qps = o.max_qps;
  dopt.engine.max_qp_wr = o.max_qp_wr;
  dopt.engine.max_rd_atomic = o.max_rd_atomic;
  dopt.overrun.mark = o.overrun_marks;
  dopt.backlog = o.backlog_marks;
  if (o.dcqcn) {
    dopt.engine.tuning.congestion.enabled = true;
    dopt.engine.tuning.congestion.rp = cc::params_for(o.dcqcn_profile, o.line_rate_gbps * 1e9);
  }
  auto dpr = dp::Dataplane::create(dopt);
  if (!dpr) return fail(dpr.error().message, dpr.error().code == ENODEV ? 2 : 1);
  int rc = 0;
  {
    RunningDataplane running;
    if (Status s = running.start(**dpr); !s) return fail(s.error().message);
    Appliance appliance(**dpr, o);
    if (Status s = appliance.start(); !s) {
      rc = fail(s.error().message, 2);
    } else {
      std::fprintf(stderr, "roce-appliance: serving %s on %s (%s), TCP exchange on port %u%s%s\n",
                   to_string(o.ip).c_str(), o.dev.c_str(), (*dpr)->port().driver.c_str(), appliance.oob_port(),
                   o.control_socket.empty() ? "" : ", control socket ", o.control_socket.c_str());
      appliance.run();
      const std::string report = appliance.report_json();
      if (o.report_path == "-") {
        std::printf("%s\n", report.c_str());
      } else {
        std::ofstream f(o.report_path);
        f << report << "\n";
        if (!f) rc = fail("cannot write the report to " + o.report_path);
      }
    }
    // Leaving the block destroys the appliance first (its control socket, sessions and drivers
    // still talk to the workers), then stops the loops.
  }
  dpr->reset();
  return rc;
}

int main(int argc, char** argv) {
  return guarded_main("roce-appliance", [&] { return appliance_main(argc, argv); });
}
