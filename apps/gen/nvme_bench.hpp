// `roce-gen nvme-read | nvme-write | nvme-randrw`: an NVMe-oF initiator (lib/nvmf's host queue)
// against lib/nvmf's target, each on its own dataplane and lcore, joined by a net_ring pair in
// this process, fio-like: block size, queue depth, number of I/O queues, duration, sequential or
// random offsets, --verify; --loss/--dup/--reorder put the link emulator between the two.
// Prints IOPS, bandwidth and latency percentiles. The in-process QPs are connected directly.
// With --target the initiator runs alone on a DPDK port and connects through rdma_cm to a real
// NVMe/RDMA target (Linux nvmet, roce-appliance --nvmf-subsystem): nvme_remote.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "client/connector.hpp"
#include "lib/status.hpp"

namespace roce::client {

enum class NvmeWorkload : std::uint8_t { Read, Write, RandRw };

struct NvmeBenchOptions {
  bool help = false;
  std::string help_text;
  NvmeWorkload workload = NvmeWorkload::Read;
  bool random = false;          // nvme-randrw is always random
  std::uint32_t block_size = 4096;
  std::uint16_t queue_depth = 16;
  std::uint16_t queues = 1;
  double seconds = 2;
  bool verify = false;
  unsigned read_percent = 50;   // nvme-randrw
  std::uint64_t namespace_mib = 64;
  std::string file;             // back the namespace with this file (made or resized to --size)
  std::uint32_t lba_size = 512;
  std::uint64_t seed = 1;
  // > 0: netsim/link_emulator between initiator and target, seeded, both ways.
  double loss = 0, duplicate = 0, reorder = 0;
  // Also run RDMA WRITEs of the same size and depth between the same two dataplanes, in the
  // same loop, for the same time: the same-run baseline the IOPS are set against.
  bool baseline = false;
  // 2: the target's dataplane and queues on a worker lcore of their own, the initiator's on the
  // main lcore (the set-up); 1: one thread steps both (robust on a busy shared machine,
  // where two spinning threads wait for each other's time slices).
  unsigned lcores = 2;
  bool json = false;
  // A remote target (--target): its IPv4 or IPv6 address, rdma_cm port and subsystem NQN, and our DPDK
  // port and address. Empty target: the in-process one.
  std::string target;
  std::uint16_t trsvcid = 4420;
  std::string nqn;
  std::string dev, ip;
  std::vector<std::string> vdevs;
  double timeout_s = 10;  // --target: how long set-up steps and the last commands may take
  // --target: the reorder window each queue's REQ offers (docs/loss.md, part 2); a rocev2-dp
  // target that agrees runs selective repeat, any other go-back-N. 0: offer nothing.
  std::uint32_t selective_repeat = kDefaultSelectiveRepeatWindow;
};

// args[0] is the program name, args[1] the mode. fio's single-dash spellings (-bs 4k, -qd 32,
// -queues 2, -time 5) are taken as well as --bs/--qd/--queues/--time.
Result<NvmeBenchOptions> parse_nvme_bench_options(const std::vector<std::string>& args);

// Runs the benchmark (EAL from `eal`); returns the exit status (1 on any I/O error or
// verification mismatch).
int run_nvme_bench(const NvmeBenchOptions& o, const std::vector<std::string>& eal);

}  // namespace roce::client
