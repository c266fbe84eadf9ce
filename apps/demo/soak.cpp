#include "apps/demo/soak.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "client/perftest_client.hpp"

namespace roce::client {

namespace {

// Resident set size of this process, KiB (/proc/self/statm: pages).
std::uint64_t rss_kib() {
  std::ifstream f("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) / 1024;
}

constexpr Verb kVerbs[] = {Verb::Write, Verb::Read, Verb::Atomic};

}  // namespace

SoakOutcome run_soak(dp::Dataplane& gen, dp::Dataplane& appl, netsim::LinkEmulator& emu, std::uint16_t oob_port,
                     const DemoOptions& o) {
  using Clock = std::chrono::steady_clock;
  std::printf("roce-demo soak: roce-gen (10.77.0.1) -> link emulator (loss %.1f %%, duplication %.1f %%, reordering %.1f %%, each way)"
              " -> roce-appliance (10.77.0.2) for %.0f s\n",
              o.loss * 100, o.duplicate * 100, o.reorder * 100, o.soak_s);
  std::printf("  rounds of %llu WRITEs / READs / atomics, each checked by reading the appliance's memory back;"
              " sizes change every round so no round passes on the data of an earlier one\n\n",
              static_cast<unsigned long long>(o.spec.iters));
  std::printf("%7s %5s %6s %8s %9s %6s %8s %5s %9s %9s\n", "t(s)", "round", "verb", "size", "msgs/s", "retx", "timeouts",
              "ok", "rss(MiB)", "mbufs");
  SoakOutcome result;
  result.gen_mbufs_before = gen.mbufs_in_use();
  result.appl_mbufs_before = appl.mbufs_in_use();
  const auto t0 = Clock::now();
  std::uint64_t rss_ref = 0, rss_max = 0, rss_last = 0;
  std::uint64_t round = 0, retransmits = 0, timeouts = 0;
  while (std::chrono::duration<double>(Clock::now() - t0).count() < o.soak_s) {
    ClientOptions co;
    co.server = "127.0.0.1";
    co.port = oob_port;
    co.spec = o.spec;
    co.spec.verb = kVerbs[round % std::size(kVerbs)];
    co.spec.measure = Measure::Bandwidth;
    co.spec.size = co.spec.verb == Verb::Atomic ? 8 : o.spec.size + static_cast<std::uint32_t>(8 * (round % 64));
    co.verify = true;
    const auto start = Clock::now();
    auto run = run_perftest_client(gen, co, nullptr);
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    if (!run) {
      std::printf("round %llu (%s): %s\n", static_cast<unsigned long long>(round), to_string(co.spec.verb).c_str(),
                  run.error().message.c_str());
      result.exit_code = 1;
      break;
    }
    const bool ok = run->verified && run->counters.errors == 0;
    rss_last = rss_kib();
    if (round + 1 == std::size(kVerbs)) rss_ref = rss_last;  // warmed up: one round of each verb done
    rss_max = std::max(rss_max, rss_last);
    retransmits += run->counters.retransmits;
    timeouts += run->counters.timeouts;
    std::printf("%7.1f %5llu %6s %8u %9.0f %6llu %8llu %5s %9.1f %4u/%-4u\n",
                std::chrono::duration<double>(Clock::now() - t0).count(), static_cast<unsigned long long>(round),
                to_string(co.spec.verb).c_str(), co.spec.size, static_cast<double>(co.spec.iters) / secs,
                static_cast<unsigned long long>(run->counters.retransmits),
                static_cast<unsigned long long>(run->counters.timeouts), ok ? "yes" : "NO", rss_last / 1024.0,
                gen.mbufs_in_use(), appl.mbufs_in_use());
    std::fflush(stdout);
    ++round;
    if (!ok) {
      std::printf("round failed: %s\n", run->counters.first_error.empty() ? "data check mismatch" : run->counters.first_error.c_str());
      result.exit_code = 1;
      break;
    }
  }
  const netsim::LinkStats there = emu.stats(netsim::Direction::XtoY);
  const netsim::LinkStats back = emu.stats(netsim::Direction::YtoX);
  auto n = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf("\nsoak: %llu rounds in %.0f s, %llu retransmitted packets, %llu timeouts\n", n(round),
              std::chrono::duration<double>(Clock::now() - t0).count(), n(retransmits), n(timeouts));
  for (const auto& [name, s] : {std::pair{"to the appliance", there}, std::pair{"back", back}})
    std::printf("  link %-16s: %llu forwarded, %llu lost, %llu duplicated, %llu reordered\n", name,
                n(s.get(netsim::LinkCounter::Forwarded)), n(s.get(netsim::LinkCounter::Lost)), n(s.get(netsim::LinkCounter::Duplicated)),
                n(s.get(netsim::LinkCounter::Reordered)));
  const double growth_mib = rss_ref ? (static_cast<double>(rss_last) - static_cast<double>(rss_ref)) / 1024.0 : 0;
  std::printf("  resident memory: %.1f MiB after warm-up, %.1f MiB at the end (%+.1f MiB), %.1f MiB at most\n",
              rss_ref / 1024.0, rss_last / 1024.0, growth_mib, rss_max / 1024.0);
  if (rss_ref && growth_mib > o.soak_rss_slack_mib) {
    std::printf("soak FAILED: resident memory grew by %.1f MiB (allowed %.0f)\n", growth_mib, o.soak_rss_slack_mib);
    result.exit_code = 1;
  }
  if (round < std::size(kVerbs)) {
    std::printf("soak FAILED: fewer rounds than verbs; give it more time\n");
    result.exit_code = 1;
  }
  return result;
}

DemoResult finish_soak(const SoakOutcome& s, dp::Dataplane& gen, dp::Dataplane& appl, netsim::LinkEmulator& emu) {
  // Step by hand until the link's delay line and reorder buffer are empty.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (std::chrono::steady_clock::now() < until) {
    gen.poll_once();
    emu.poll(emu.now());
    appl.poll_once();
  }
  for (dp::Dataplane* d : {&gen, &appl}) {
    d->flush();
    for (unsigned w = 0; w < d->worker_count(); ++w) d->worker(w).release_stash();
  }
  DemoResult r;
  r.exit_code = s.exit_code;
  const unsigned g = gen.mbufs_in_use(), a = appl.mbufs_in_use(), e = emu.mbufs_in_use();
  std::printf("  mbufs out of the pools: generator %u -> %u, appliance %u -> %u, link emulator %u\n", s.gen_mbufs_before, g,
              s.appl_mbufs_before, a, e);
  if (g != s.gen_mbufs_before || a != s.appl_mbufs_before || e != 0) {
    std::printf("soak FAILED: mbufs not back in their pools\n");
    r.exit_code = 1;
  }
  std::printf("%s\n", r.exit_code == 0 ? "soak: PASSED (every round verified, no growth)" : "soak: FAILED");
  return r;
}

}  // namespace roce::client
