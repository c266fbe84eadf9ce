// perf_suite: the transport's figures next to same-run baselines, as JSON (raw samples; the
// medians, ratios, table and plot come from scripts/bench_report.py). Timings are printed,
// never asserted: the exit status says only whether the transport worked (no errors, drops or
// lost completions) while measured.
//
//   perf_suite [EAL args --] [--out FILE] [--runs N] [--window S] [--rtt-samples N]
//              [--big-mib M] [--sizes a,b,c] [--only case,...] [--smoke]
//              [--max-inflight PSNs] [--max-inflight-bytes B] [--ack-req-every N] [--send-window] [--congestion-window on|off] [--sr-window on|off] [--window-floor PACKETS]
//              [--sr-placement on|off] [--sr-timer standing|srtt] [--sr-probe on|off] [--loss-verb write|read] (loss: 64 KiB WRITEs or READs)
//              [--loss-lcores 1|2] (loss: responder and link emulator on this thread, or on the next lcore)
//              [--sr-reorder-window PSNs] (loss: selective repeat's reorder window, 8..128, default 128)
//              [--loss-link GBITS,DELAY_US] (loss: the emulator's bottleneck rate and one-way delay, each way)
//              [--loss-rates PCT,..] (loss: the lossy rates, default 0.1,1,5; lossless always runs first)
//              [--bdp-cap on|off] [--bdp-loss-interval N] [--bdp-floor P] [--bdp-free on|off] [--bdp-free-rate F]
//              [--bdp-growth G,MAX] (a costly verdict grows the cap G times, up to MAX x rate x min RTT; 1,1: never)
//              [--bdp-shrink on|off] (a grown cap tries one step smaller after a free verdict)
//              [--bdp-judge goodput|samples] (a trial judged by goodput, or by the RTT samples' median rate)
//              [--bdp-split adaptive|on|off] (while the cap bounds a QP, 1/N of it per turn, N = --bdp-parts;
//              off by default; adaptive: not while the peer answers each part before the next turn)
//              [--bdp-parts N] (the cap's parts, default 3)
//              (go-back-N's BDP cap, WindowTuning)
//              [--loss-baseline] (loss: go-back-N before the BDP cap and tail probe in selective repeat's place)
//              [--loss-baseline-bdp-interval N] [--loss-baseline-bdp-free on|off] [--loss-baseline-bdp-growth G,MAX]
//              [--loss-baseline-bdp-shrink on|off] [--loss-baseline-bdp-judge goodput|samples]
//              [--loss-baseline-bdp-floor P] [--loss-baseline-bdp-parts N] [--loss-baseline-bdp-split adaptive|on|off] [--loss-baseline-max-inflight PSNs] [--loss-baseline-bdp-cap on|off] (loss: the
//              same, with go-back-N's BDP cap at loss interval N (0: after any loss), with the cap where it is free on or off,
//              grown otherwise, with the grown cap shrinking or not, with the trial judged otherwise, with
//              another static in-flight cap: what a fixed cap costs, counted in the same turns)
//              [--split-small-window on|off] [--split-parts N] [--loss-baseline-split-small-window on|off] (go-back-N
//              with a small in-flight cap sends 1/N of it per turn (2: half) and asks for an ACK as often; the baseline's own setting)
//              [--tail-probe-us U] (go-back-N's tail probe: 0 off; selective repeat's floor; default 20)
//              [--tail-probe-floor-us U] (go-back-N's tail probe wait follows the path above U us, default 5;
//              0: the fixed wait of sessions 7-17, max(--tail-probe-us, 2 srtt))
//              [--early-retransmit-us U] (0: off) [--no-icrc-linear] [--no-request-template] [--no-tx-runs] (one-packet WQEs built frame by frame, not as runs)
//              [--ack-template on|off] (RC ACKs from a prebuilt frame)
//              [--write-runs on|off] (an RC responder's in-sequence WRITEs on the straight path, per-QP checks once a run)
//              [--straight-acks on|off] (an RC requester's plain ACKs on the completer's straight path)
//              [--seal-runs on|off] (a requester run's frames sealed together once all are written)
//              [--seal-clmul on|off] (those frames' ICRCs by the carry-less kernel where the CPU has it, or ISA-L)
//              [--icrc-clmul on|off] (off: the carry-less kernel off for the whole process, every ICRC,
//              single frames', runs' and the protocol floor's, by ISA-L as on a CPU without AVX-512)
//              [--shared-pool on|off] (on, the default: a rig's two sides share one mbuf pool, each reuses
//              a received mbuf for its next frame; off: a pool each, every received mbuf goes back to the peer's)
//              [--emulator-polls direction|both] (direction, the default: a one-thread rig polls its link
//              emulator one direction at a time, each frame delivered at the same step; both: twice a step whole)
//              [--loss-step-parts on|off] (off: the loss case's one-thread steps timed in parts, A's poll, the
//              link emulator, B's poll: five TSC reads a step more)
//              [--paired-floor on|off] (off: no protocol floor before each 64 B rate, responder and RTT
//              window, so that a profile holds the transport's work only; the paired ratios are left out)
//              [--ack-hold TURNS,US] (a plain ACK waits up to TURNS transmit turns and US microseconds
//              while RX bursts come back full; 0,0: never)
//              (TransportTuning of every engine)
//              [--scaling-feed warm|cold] (scaling, fanout: cold, the default, evicts the loaded frames)
//              [--scaling-refill lane|loader] (scaling: a worker's next round loaded into mbufs taken on its lcore, or on the loader's, the default)
//              [--scaling-slots cold|warm] (scaling: the queues' ring slots evicted after loading, the default, or left in the loader's cache)
//              [--scaling-reclaim ring|port] (scaling: a lane frees its worker's ACKs from the queue's ring, the default, or by the feeder port's rx_burst)
//              [--fanout-qps a,b] (fanout: only these QP counts, ACKs asked for on every message)
//              [--qp-runs on|off] (scaling, fanout, responder: each worker's RX bursts grouped by destination QP, or as they came)
// Cases: baselines, protocol, responder, scaling, fanout, goodput, rate, rtt, loss, cycles, zerocopy (rate: goodput's
// 64 B WRITE message-rate shape alone, 1 QP, 1 KiB MTU; run with goodput it adds nothing; zerocopy: the
// sender's work per 4 KiB WRITE packet, payload copied against referenced by an extbuf mbuf; scaling: --sizes
// picks its 64 B and 4 KiB shapes; fanout: one worker taking 64 B WRITEs from 1 to 16 QPs).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "bench/suite/cases.hpp"
#include "bench/suite/rig.hpp"
#include "protocol/crc32_short.hpp"
#include "dataplane/eal.hpp"

namespace {

using namespace roce;
using namespace roce::bench;

std::size_t llc_bytes() {
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return l3 > 0 ? static_cast<std::size_t>(l3) : 32u << 20;
}

// A count option's value: a number that fits 32 bits (std::stoul alone takes "-1" and 2^40 and the
// cast would wrap them); anything else is refused like a malformed number (main's catch).
std::uint32_t u32(const std::string& v) {
  if (v.find('-') != std::string::npos) throw std::out_of_range("not a count");
  const unsigned long n = std::stoul(v);
  if (n > UINT32_MAX) throw std::out_of_range("above 4294967295");
  return static_cast<std::uint32_t>(n);
}

std::vector<std::uint32_t> parse_sizes(const std::string& s) {
  std::vector<std::uint32_t> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(u32(item));
  return out;
}

// "G,MAX": WindowTuning::bdp_cap_growth and bdp_cap_max_growth (1,1: no growth, session 10's cap).
bool parse_growth(const std::string& v, rdma::WindowTuning& w) {
  const std::size_t comma = v.find(',');
  if (comma == std::string::npos) {
    std::fprintf(stderr, "perf_suite: --bdp-growth wants G,MAX\n");
    return false;
  }
  w.bdp_cap_growth = std::stod(v.substr(0, comma));
  w.bdp_cap_max_growth = std::stod(v.substr(comma + 1));
  return true;
}

// An on|off option's value; anything else is refused like a malformed number (main's catch).
bool on_off(const std::string& v) {
  if (v != "on" && v != "off") throw std::invalid_argument("on or off");
  return v == "on";
}

// WindowTuning::bdp_cap_judge: "goodput" or "samples"; anything else is refused as above.
rdma::BdpJudge bdp_judge(const std::string& v) {
  if (v != "goodput" && v != "samples") throw std::invalid_argument("goodput or samples");
  return v == "goodput" ? rdma::BdpJudge::Goodput : rdma::BdpJudge::SampleRates;
}

// WindowTuning::bdp_cap_split and bdp_cap_split_adaptive from adaptive|on|off.
bool bdp_split(const std::string& v, rdma::WindowTuning& w) {
  if (v != "adaptive" && v != "on" && v != "off") {
    std::fprintf(stderr, "perf_suite: --bdp-split wants adaptive, on or off\n");
    return false;
  }
  w.bdp_cap_split = v != "off";
  w.bdp_cap_split_adaptive = v == "adaptive";
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string prefix = "--file-prefix=roce_perf_suite_" + std::to_string(getpid());
  const dp::SplitArgs args =
      dp::split_args(argc, argv, {"--no-huge", "--no-pci", "-m", "2048", prefix, "--log-level=error", "--no-telemetry"});
  SuiteConfig c;
  c.sizes = {64, 256, 1024, 4096, 16384, 65536, 262144, 1048576};
  std::string out_path = "perf_suite.json";
  std::set<std::string> only;
  std::size_t big_mib = 0;
  bool loss_baseline = false;
  double bdp_baseline_interval = -1;
  int bdp_baseline_free = -1;
  std::string bdp_baseline_growth;
  int bdp_baseline_shrink = -1;
  std::optional<rdma::BdpJudge> bdp_baseline_judge;
  std::uint32_t baseline_inflight = 0;
  int baseline_bdp_cap = -1;  // --loss-baseline-bdp-cap (-1: on, as the gated baseline always was)
  int baseline_split = -1;  // --loss-baseline-split-small-window: -1 as the main tuning
  int baseline_bdp_split = -1;  // --loss-baseline-bdp-split given
  std::string baseline_bdp_split_mode;
  double baseline_bdp_floor = -1;  // --loss-baseline-bdp-floor
  std::uint32_t baseline_bdp_parts = 0;  // --loss-baseline-bdp-parts (0: as the main tuning)
  std::size_t i = 1;
  try {
    for (; i < args.app.size(); ++i) {
      const std::string& a = args.app[i];
      const bool has = i + 1 < args.app.size();
      if (a == "--smoke") {
        c.smoke = true;
        c.runs = 2;
        c.window = 0.01;
        c.rtt_samples = 200;
        c.sizes = {64, 4096, 65536};
        big_mib = big_mib ? big_mib : 64;
      } else if (a == "--out" && has) {
        out_path = args.app[++i];
      } else if (a == "--runs" && has) {
        c.runs = u32(args.app[++i]);
      } else if (a == "--window" && has) {
        c.window = std::stod(args.app[++i]);
      } else if (a == "--rtt-samples" && has) {
        c.rtt_samples = u32(args.app[++i]);
      } else if (a == "--big-mib" && has) {
        big_mib = std::stoul(args.app[++i]);
      } else if (a == "--sizes" && has) {
        c.sizes = parse_sizes(args.app[++i]);
      } else if (a == "--max-inflight" && has) {
        c.tuning.max_inflight_packets = u32(args.app[++i]);
      } else if (a == "--max-inflight-bytes" && has) {
        c.tuning.max_inflight_bytes = u32(args.app[++i]);
      } else if (a == "--early-retransmit-us" && has) {
        c.tuning.early_retransmit_min = static_cast<Nanos>(std::stoul(args.app[++i])) * kMicro;
      } else if (a == "--tail-probe-us" && has) {
        c.tuning.tail_probe_min = static_cast<Nanos>(std::stoul(args.app[++i])) * kMicro;
      } else if (a == "--tail-probe-floor-us" && has) {
        // TransportTuning::tail_probe_floor (default 5); 0: the wait of sessions 7-17, max(--tail-probe-us, 2 srtt).
        c.tuning.tail_probe_floor = static_cast<Nanos>(u32(args.app[++i])) * kMicro;
      } else if (a == "--bdp-cap" && has) {
        c.tuning.window.bdp_cap = on_off(args.app[++i]);
      } else if (a == "--bdp-loss-interval" && has) {
        c.tuning.window.bdp_cap_loss_interval = std::stod(args.app[++i]);
      } else if (a == "--bdp-free" && has) {
        c.tuning.window.bdp_cap_when_free = on_off(args.app[++i]);
      } else if (a == "--bdp-free-rate" && has) {
        c.tuning.window.bdp_cap_free_rate = std::stod(args.app[++i]);
      } else if (a == "--bdp-growth" && has) {
        if (!parse_growth(args.app[++i], c.tuning.window)) return 2;
      } else if (a == "--bdp-shrink" && has) {
        c.tuning.window.bdp_cap_shrink = on_off(args.app[++i]);
      } else if (a == "--bdp-judge" && has) {
        c.tuning.window.bdp_cap_judge = bdp_judge(args.app[++i]);
      } else if (a == "--loss-baseline-bdp-cap" && has) {
        baseline_bdp_cap = on_off(args.app[++i]) ? 1 : 0;
      } else if (a == "--loss-baseline-max-inflight" && has) {
        baseline_inflight = u32(args.app[++i]);
      } else if (a == "--loss-baseline-bdp-judge" && has) {
        bdp_baseline_judge = bdp_judge(args.app[++i]);
      } else if (a == "--loss-baseline-bdp-shrink" && has) {
        bdp_baseline_shrink = on_off(args.app[++i]) ? 1 : 0;
      } else if (a == "--loss-baseline-bdp-growth" && has) {
        bdp_baseline_growth = args.app[++i];
      } else if (a == "--bdp-split" && has) {
        if (!bdp_split(args.app[++i], c.tuning.window)) return 2;
      } else if (a == "--loss-baseline-bdp-split" && has) {
        baseline_bdp_split_mode = args.app[++i];
        baseline_bdp_split = 1;
      } else if (a == "--bdp-parts" && has) {
        c.tuning.window.bdp_cap_parts = u32(args.app[++i]);
      } else if (a == "--loss-baseline-bdp-parts" && has) {
        baseline_bdp_parts = u32(args.app[++i]);
      } else if (a == "--loss-baseline-bdp-floor" && has) {
        baseline_bdp_floor = std::stod(args.app[++i]);
      } else if (a == "--bdp-floor" && has) {
        c.tuning.window.bdp_cap_floor = std::stod(args.app[++i]);
      } else if (a == "--loss-verb" && has) {
        c.loss_read = args.app[++i] == "read";
      } else if (a == "--loss-baseline") {
        loss_baseline = true;
      } else if (a == "--shared-pool" && has) {
        rig_share_pool(on_off(args.app[++i]));
      } else if (a == "--emulator-polls" && has) {
        const std::string v = args.app[++i];
        if (v != "direction" && v != "both") throw std::invalid_argument("--emulator-polls: direction or both");
        rig_per_direction_polls(v == "direction");
      } else if (a == "--loss-step-parts" && has) {
        rig_time_parts(on_off(args.app[++i]));
      } else if (a == "--paired-floor" && has) {
        c.paired_floor = on_off(args.app[++i]);
      } else if (a == "--loss-baseline-bdp-free" && has) {
        bdp_baseline_free = on_off(args.app[++i]) ? 1 : 0;
      } else if (a == "--loss-baseline-bdp-interval" && has) {
        bdp_baseline_interval = std::stod(args.app[++i]);
      } else if (a == "--loss-link" && has) {
        const std::string v = args.app[++i];
        const std::size_t comma = v.find(',');
        if (comma == std::string::npos) {
          std::fprintf(stderr, "perf_suite: --loss-link wants GBITS,DELAY_US\n");
          return 2;
        }
        c.loss_rate_bps = std::stod(v.substr(0, comma)) * 1e9;
        c.loss_delay = static_cast<Nanos>(std::stod(v.substr(comma + 1)) * 1e3);
      } else if (a == "--loss-rates" && has) {
        std::stringstream in(args.app[++i]);
        std::string item;
        c.loss_rates.clear();
        while (std::getline(in, item, ','))
          if (const double pct = std::stod(item); pct > 0) c.loss_rates.push_back(pct / 100);
      } else if (a == "--loss-lcores" && has) {
        c.loss_lcores = u32(args.app[++i]);
      } else if (a == "--sr-reorder-window" && has) {
        c.loss_sr_window = u32(args.app[++i]);
      } else if (a == "--no-icrc-linear") {
        c.tuning.icrc_linear = false;
      } else if (a == "--no-request-template") {
        c.tuning.request_template = false;
      } else if (a == "--no-tx-runs") {
        c.tuning.tx_runs = false;
      } else if (a == "--send-window") {
        c.tuning.window.enabled = true;
      } else if (a == "--congestion-window" && has) {
        // The congestion-only windows of go-back-N and selective repeat QPs (on by default).
        c.tuning.window.go_back_n_congestion = c.tuning.window.selective_repeat = on_off(args.app[++i]);
      } else if (a == "--qp-runs" && has) {
        c.qp_runs = on_off(args.app[++i]);
      } else if (a == "--scaling-refill" && has) {
        const std::string v = args.app[++i];
        if (v != "lane" && v != "loader") throw std::invalid_argument("lane or loader");
        c.scaling_lane_refill = v == "lane";
      } else if (a == "--scaling-slots" && has) {
        const std::string v = args.app[++i];
        if (v != "warm" && v != "cold") throw std::invalid_argument("warm or cold");
        c.scaling_warm_slots = v == "warm";
      } else if (a == "--scaling-reclaim" && has) {
        const std::string v = args.app[++i];
        if (v != "port" && v != "ring") throw std::invalid_argument("port or ring");
        c.scaling_reclaim_port = v == "port";
      } else if (a == "--scaling-feed" && has) {
        const std::string v = args.app[++i];
        if (v != "cold" && v != "warm") throw std::invalid_argument("cold or warm");
        c.scaling_warm_feed = v == "warm";
      } else if (a == "--ack-template" && has) {
        c.tuning.ack_template = on_off(args.app[++i]);
      } else if (a == "--write-runs" && has) {
        c.tuning.write_runs = on_off(args.app[++i]);
      } else if (a == "--straight-acks" && has) {
        c.tuning.straight_acks = on_off(args.app[++i]);
      } else if (a == "--seal-runs" && has) {
        c.tuning.seal_runs = on_off(args.app[++i]);
      } else if (a == "--seal-clmul" && has) {
        c.tuning.seal_clmul = on_off(args.app[++i]);
      } else if (a == "--icrc-clmul" && has) {
        proto::crc32_short_use(on_off(args.app[++i]));  // before any engine or lcore starts
      } else if (a == "--fanout-qps" && has) {
        c.fanout_qps = parse_sizes(args.app[++i]);
      } else if (a == "--sr-window" && has) {
        c.tuning.window.selective_repeat = on_off(args.app[++i]);
      } else if (a == "--sr-placement" && has) {
        c.tuning.reorder_placement = on_off(args.app[++i]);
      } else if (a == "--sr-probe" && has) {
        c.tuning.selective_tail_probe = on_off(args.app[++i]);
      } else if (a == "--sr-timer" && has) {
        c.tuning.early_retransmit_standing_rtt = args.app[++i] == "standing";
      } else if (a == "--window-floor" && has) {
        c.tuning.window.random_loss_floor = std::stod(args.app[++i]);
      } else if (a == "--split-small-window" && has) {
        c.tuning.split_small_window = on_off(args.app[++i]);
      } else if (a == "--split-parts" && has) {
        c.tuning.small_window_parts = u32(args.app[++i]);
      } else if (a == "--loss-baseline-split-small-window" && has) {
        baseline_split = on_off(args.app[++i]) ? 1 : 0;
      } else if (a == "--ack-req-every" && has) {
        c.tuning.ack_req_every = u32(args.app[++i]);
      } else if (a == "--ack-hold" && has) {
        const std::vector<std::uint32_t> v = parse_sizes(args.app[++i]);
        if (v.size() != 2) {
          std::fprintf(stderr, "perf_suite: --ack-hold wants TURNS,US\n");
          return 2;
        }
        c.tuning.ack_hold = rdma::AckHold{v[0], static_cast<Nanos>(v[1]) * kMicro};
      } else if (a == "--only" && has) {
        std::stringstream in(args.app[++i]);
        std::string item;
        while (std::getline(in, item, ',')) only.insert(item);
      } else {
        std::fprintf(stderr, "perf_suite: unknown argument %s\n", a.c_str());
        return 2;
      }
    }
  } catch (const std::logic_error& e) {  // std::stoul / std::stod / on_off on a malformed value
    std::fprintf(stderr, "perf_suite: bad value '%s' for %s (%s)\n", args.app[i].c_str(), args.app[i - 1].c_str(), e.what());
    return 2;
  }
  if (loss_baseline) {
    // Go-back-N as it was before the BDP cap and the tail probe, in the loss case's same turns.
    rdma::TransportTuning b = c.tuning;
    b.window.bdp_cap = false;
    b.tail_probe_min = 0;
    c.loss_baseline = b;
  }
  if (bdp_baseline_interval >= 0 || bdp_baseline_free >= 0 || !bdp_baseline_growth.empty() || bdp_baseline_shrink >= 0 ||
      bdp_baseline_judge || baseline_inflight > 0 || baseline_split >= 0 || baseline_bdp_split >= 0 || baseline_bdp_floor >= 0 ||
      baseline_bdp_parts > 0 || baseline_bdp_cap >= 0) {
    // The same tuning with the BDP cap gated otherwise: at another loss interval (0: held after
    // any loss), with or without the cap where it is free.
    rdma::TransportTuning b = c.tuning;
    b.window.bdp_cap = baseline_bdp_cap != 0;
    if (bdp_baseline_interval >= 0) b.window.bdp_cap_loss_interval = bdp_baseline_interval;
    if (bdp_baseline_free >= 0) b.window.bdp_cap_when_free = bdp_baseline_free == 1;
    if (!bdp_baseline_growth.empty() && !parse_growth(bdp_baseline_growth, b.window)) return 2;
    if (bdp_baseline_shrink >= 0) b.window.bdp_cap_shrink = bdp_baseline_shrink == 1;
    if (bdp_baseline_judge) b.window.bdp_cap_judge = *bdp_baseline_judge;
    if (baseline_inflight > 0) b.max_inflight_packets = baseline_inflight;
    if (baseline_split >= 0) b.split_small_window = baseline_split == 1;
    if (baseline_bdp_split >= 0 && !bdp_split(baseline_bdp_split_mode, b.window)) return 2;
    if (baseline_bdp_floor >= 0) b.window.bdp_cap_floor = baseline_bdp_floor;
    if (baseline_bdp_parts > 0) b.window.bdp_cap_parts = baseline_bdp_parts;
    c.loss_baseline = b;
  }
  if (c.loss_sr_window < 8 || c.loss_sr_window > 128) {
    std::fprintf(stderr, "perf_suite: --sr-reorder-window wants 8..128 PSNs\n");
    return 2;
  }
  if (c.tuning.small_window_parts == 0) {
    std::fprintf(stderr, "perf_suite: --split-parts wants 1 or more turns to split a small window into\n");
    return 2;
  }
  if (c.tuning.window.bdp_cap_parts == 0) {
    std::fprintf(stderr, "perf_suite: --bdp-parts wants 1 or more parts to send a held BDP cap in\n");
    return 2;
  }
  if (c.runs == 0 || c.window <= 0 || c.rtt_samples == 0 || c.sizes.empty()) {
    std::fprintf(stderr, "perf_suite: --runs, --window, --rtt-samples and --sizes must be positive\n");
    return 2;
  }
  const std::size_t llc = llc_bytes();
  c.big_bytes = big_mib ? big_mib << 20 : std::clamp<std::size_t>(2 * llc, 256u << 20, 1u << 30);
  if (const auto s = dp::Eal::init(args.eal); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.error().message.c_str());
    return 1;
  }
  auto want = [&](const char* name) { return only.empty() || only.count(name); };
  Results r;
  bool ok = true;
  auto run = [&](const char* name, auto&& fn) {
    if (!want(name) || !ok) return;
    std::fprintf(stderr, "perf_suite: %s\n", name);
    if (!fn()) {
      std::fprintf(stderr, "perf_suite: %s failed\n", name);
      ok = false;
    }
  };
  run("baselines", [&] {
    bool good = memcpy_bandwidth(c, r) && icrc_bandwidth(c, r) && ring_pingpong(c, r);
    for (const std::uint32_t p : {64u, 256u, 1024u, 4096u})
      good = good && forward_baseline(c, p, r) && memcpy_icrc_ceiling(c, p, r);
    return good;
  });
  run("protocol", [&] { return protocol_cost(c, r); });
  run("responder", [&] { return responder_worker(c, 64, 64, r) && responder_worker(c, 4096, 65536, r); });
  run("scaling", [&] { return worker_scaling(c, r); });
  run("fanout", [&] { return responder_fanout(c, r); });
  run("goodput", [&] { return goodput_sweep(c, r); });
  run("rate", [&] {
    SuiteConfig rc = c;
    rc.rate_only = true;
    rc.sizes = {64};
    return want("goodput") || goodput_sweep(rc, r);  // goodput measures the same shape
  });
  run("rtt", [&] { return write_rtt(c, r); });
  run("loss", [&] { return loss_goodput(c, r); });
  run("cycles", [&] { return cycles_per_packet(c, r); });
  run("zerocopy", [&] { return zero_copy_transmit(c, r); });

  JsonWriter w;
  w.begin_object();
  w.key("config").begin_object();
  w.field("runs", c.runs).field("window_s", c.window).field("rtt_samples", c.rtt_samples);
  w.field("big_buffer_mib", static_cast<std::uint64_t>(c.big_bytes >> 20)).field("llc_reported_mib", static_cast<std::uint64_t>(llc >> 20));
  w.field("smoke", c.smoke).field("ok", ok);
  w.field("send_window", c.tuning.window.enabled).field("gbn_congestion_window", c.tuning.window.go_back_n_congestion).field("sr_congestion_window", c.tuning.window.selective_repeat).field("max_inflight_packets", c.tuning.max_inflight_packets).field("max_inflight_bytes", c.tuning.max_inflight_bytes);
  w.field("ack_req_every", c.tuning.ack_req_every).field("icrc_linear", c.tuning.icrc_linear);
  w.field("request_template", c.tuning.request_template);
  w.field("early_retransmit_us", static_cast<std::uint64_t>(c.tuning.early_retransmit_min / kMicro));
  w.field("tail_probe_us", static_cast<std::uint64_t>(c.tuning.tail_probe_min / kMicro)).field("tail_probe_floor_us", static_cast<std::uint64_t>(c.tuning.tail_probe_floor / kMicro));
  w.field("loss_sr_window", c.loss_sr_window).field("ack_hold_turns", c.tuning.ack_hold.turns).field("ack_hold_us", static_cast<std::uint64_t>(c.tuning.ack_hold.age / kMicro));
  w.end_object();
  r.write(w);
  w.end_object();
  std::ofstream f(out_path);
  f << w.str() << '\n';
  if (!f) {
    std::fprintf(stderr, "perf_suite: cannot write %s\n", out_path.c_str());
    ok = false;
  }
  dp::Eal::cleanup();
  return ok ? 0 : 1;
}
