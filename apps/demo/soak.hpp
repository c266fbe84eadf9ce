// roce-demo --soak: the generator against the appliance through a faulty link for a bounded
// time, round after round of verified transfers, watching for anything that grows: resident
// memory, mbufs out of the pools, transport errors.
#pragma once

#include <cstdint>

#include "apps/demo/demo.hpp"
#include "dataplane/dataplane.hpp"
#include "netsim/link_emulator.hpp"

namespace roce::client {

struct SoakOutcome {
  int exit_code = 0;
  unsigned gen_mbufs_before = 0;   // out of the pools before the first round
  unsigned appl_mbufs_before = 0;
};

// Runs rounds (WRITE, READ, atomic, each checked by reading back) against the appliance at
// 127.0.0.1:oob_port until o.soak_s have passed, with the dataplanes and the emulator stepped
// by another thread. Prints one line per round; fails on the first unverified round or on
// resident memory growing by more than o.soak_rss_slack_mib after one round of each verb.
SoakOutcome run_soak(dp::Dataplane& gen, dp::Dataplane& appl, netsim::LinkEmulator& emu, std::uint16_t oob_port,
                     const DemoOptions& o);

// Once nothing else steps them: drains the link, flushes the dataplanes, gives back what they
// keep for the next transmit, and fails unless every mbuf is back in its pool. Prints the verdict.
DemoResult finish_soak(const SoakOutcome& s, dp::Dataplane& gen, dp::Dataplane& appl, netsim::LinkEmulator& emu);

}  // namespace roce::client
