// The dataplane's counters as rte_telemetry commands, readable with DPDK's dpdk-telemetry.py
// (or anything speaking its socket protocol) while the dataplane runs:
//   /rocev2/dataplanes                     name -> {mode, ip, mac, worker_count, port_name}
//   /rocev2/ports[,<dp>]                   rte_eth_stats and port set-up
//   /rocev2/workers[,<dp>]                 per worker lcore (and the IO lcore in pipeline mode)
//   /rocev2/engine[,<dp>[,<worker>]]       engine drops, parse drops, transport and DCQCN sums
//   /rocev2/qps[,<dp>]                     the QPNs of each dataplane
//   /rocev2/qp,[<dp>,]<qpn>                one QP: state, every counter, DCQCN rates and counters
// Without <dp> a command covers every live dataplane of the process, keyed by name. Values
// come from the snapshots the loops publish (every stats_interval_ns), never from the live
// counters, so reading them costs the workers nothing. Commands are registered once per
// process (DPDK cannot unregister them); dataplanes attach and detach as they come and go.
#pragma once

#include <string>

namespace roce::dp {

class Dataplane;

void telemetry_attach(Dataplane* dp);
void telemetry_detach(Dataplane* dp);

// The v2 socket of this process's EAL (empty before rte_eal_init).
std::string telemetry_socket_path();

}  // namespace roce::dp
