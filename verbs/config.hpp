// How the device a verbs program gets is set up: its port (DPDK virtual devices and the ethdev
// to use), its address (the GID), the path MTU it offers and the EAL it runs on. The same words
// come from roce-run's command line, the ROCE_VERBS_ARGS environment variable (roce-run passes
// them there) or a small config file (ROCE_VERBS_CONFIG or --config: "key value" lines).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/rdma/address.hpp"
#include "lib/status.hpp"

namespace roce::verbs {

// When nobody else drives the engine, the dataplane thread polls without a pause (busy), or
// sleeps in short naps after a while without traffic (adaptive: a first packet after a quiet
// spell waits up to one nap, but a program's device no longer takes a core while idle, and on a
// machine with more busy threads than cores the scheduler wakes a thread that sleeps promptly
// where a spinning one waits for its time slice).
enum class PollMode : std::uint8_t { Busy, Adaptive };

struct DeviceConfig {
  std::string name = "rocedp0";        // the device name programs see (ibv_devices, -d)
  // Service mode: the UNIX socket of a roce-verbsd that owns the port (no EAL in the program;
  // the port options then belong to the service and are refused here).
  std::string service;
  std::optional<rdma::IpAddress> ip;         // our address; GID 0 is it (an IPv4 one in its IPv4-mapped form)
  std::vector<std::string> vdevs;      // DPDK --vdev arguments
  std::string port;                    // ethdev name; default: the first vdev's driver name
  std::uint32_t max_mtu = 4096;        // largest path MTU offered (also capped by the link)
  std::vector<std::string> eal_extra;  // further EAL arguments
  std::optional<unsigned> cpu;         // pin the dataplane thread to this CPU
  std::uint32_t memory_mb = 256;       // EAL -m
  std::uint32_t mbufs = 8191;
  PollMode poll = PollMode::Adaptive;
  std::uint32_t idle_nap_us = 50;      // adaptive: nap length once idle
  // A program thread whose poll stepped the engine to a completion, with nothing left to send,
  // steps on this long for the peer's next frame (0: never). See Runtime::linger_from_app.
  std::uint32_t linger_us = 20;
  std::uint32_t max_qps = 1024;
  std::uint32_t max_mrs = 4096;
  // Outstanding READ/atomic requests per QP, each direction. perftest's read and atomic tests
  // set a QP's max_rd_atomic to the peer's max_qp_rd_atom; rxe reports 128, so a device with
  // less cannot run them against rxe (modify to RTS fails, as it would on any device).
  std::uint8_t max_rd_atomic = 128;
};

// Words as a shell would split them: whitespace separates, '...' and "..." quote, \ escapes.
Result<std::vector<std::string>> split_words(const std::string& text);
// The inverse: words quoted so that split_words gives them back.
std::string join_words(const std::vector<std::string>& words);

// Parses option words (--ip A, --vdev S, ..., also --key=value). --config FILE reads a file
// whose lines are "key value" or "key = value" (# starts a comment) at that point.
Result<DeviceConfig> parse_config(const std::vector<std::string>& words);
// The option words from the environment: ROCE_VERBS_CONFIG (a file) then ROCE_VERBS_ARGS.
// ROCE_VERBS_SERVICE=PATH adds --service PATH. Empty when none is set.
Result<std::vector<std::string>> config_words_from_environment();
// Usage text of the option words.
std::string config_usage();

// The EAL arguments of a device: no hugepages or PCI, no shared config (no files under /var/run/dpdk
// that a killed program would leave), no telemetry socket, a per-process prefix, one lcore
// allowed on every CPU (or the one --cpu names), then --vdev and the extra arguments.
std::vector<std::string> eal_arguments(const DeviceConfig& c, long pid, unsigned online_cpus);
// The ethdev name a config uses.
std::string port_name(const DeviceConfig& c);

}  // namespace roce::verbs
