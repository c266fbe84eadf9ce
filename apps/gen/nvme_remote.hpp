// `roce-gen nvme-read|nvme-write|nvme-randrw --target IP --nqn NQN --dev PORT --ip ADDR`: the
// NVMe-oF initiator alone on a DPDK port against a real NVMe/RDMA target (the Linux kernel's
// nvmet, roce-appliance --nvmf-subsystem), each queue connected as nvme-rdma connects it:
// rdma_cm REQ with the NVMe/RDMA private data (QID, HRQSIZE, HSQSIZE) on TCP port 4420,
// responder resources offered so the target can RDMA READ write data; then Fabrics Connect,
// CC.EN and CSTS.RDY, Identify Controller (in-capsule size) and Namespace (size, LBA size),
// Number of Queues, and one QP per I/O queue. The workload is the in-process benchmark's:
// every command slot owns its stripe of the first --size MiB, so --verify knows what each read
// must return (with --verify the stripes are written once first, and read back at the end).
// KATO 0: the run sends no Keep Alives and the target keeps no timer for it.
#pragma once

#include <string>
#include <vector>

#include "apps/gen/nvme_bench.hpp"

namespace roce::client {

int run_nvme_remote(const NvmeBenchOptions& o, const std::vector<std::string>& eal);

}  // namespace roce::client
