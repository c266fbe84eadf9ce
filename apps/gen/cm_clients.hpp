// roce-gen's rdma_cm clients: the active side of librdmacm's example programs, against their
// real servers (or roce-appliance --rdma-cm). `roce-gen rping` does what `rping -c` does: per
// round it SENDs its start buffer's address, waits for the server's go-ahead (the server has
// READ the buffer), SENDs its second buffer's address, waits again (the server has WRITTEN the
// data back) and, with -V, checks the second buffer equals the first. `roce-gen ucmatose` does
// what `ucmatose -s` does: receives the server's messages, sends as many back, and waits for the
// server to disconnect. Each connects through CmService (REQ/REP/RTU) and leaves with DREQ.
// `roce-gen udaddy` does what `udaddy -s` does: resolves the server's UD QP by SIDR (UDP port
// space), sends its datagrams (SEND with immediate: its QPN) and receives as many back.
// `roce-gen rdma_client` does what librdmacm's rdma_client does: posts one 16-byte receive,
// connects (TCP port space, 7471), SENDs 16 bytes inline, waits for that and for the server's
// 16 bytes, and disconnects.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "client/cm_service.hpp"
#include "client/connector.hpp"
#include "dataplane/eal.hpp"

namespace roce::client {

struct CmClientOptions {
  std::string tool;  // rping, ucmatose, udaddy or rdma_client
  rdma::IpAddress server{};  // either family, as --ip
  std::uint16_t port = 0;      // 0: the tool's default (7174, 7471)
  std::uint32_t count = 10;    // -C
  std::uint32_t size = 0;      // -S; 0: the tool's default (rping 64, ucmatose and udaddy 100)
  bool verify = false;         // rping -V
  bool verbose = false;        // rping -v: print each round's data
  Nanos timeout = 10 * kSecond;  // for each step (connection, each round)
  // RC tools: the reorder window offered in the REQ's ECE (docs/loss.md, part 2); a rocev2-dp
  // server that agrees runs selective repeat, any other peer go-back-N. 0: offer nothing.
  std::uint32_t selective_repeat = kDefaultSelectiveRepeatWindow;
};

struct CmClientResult {
  std::uint64_t rounds = 0;            // rping
  std::uint64_t messages_received = 0; // ucmatose
  std::uint64_t messages_sent = 0;
  std::uint64_t mismatches = 0;        // rping -V
  std::uint32_t selective_repeat = 0;  // the reorder window the server agreed to; 0 = go-back-N
};

// Fills the tool's defaults in (port, size) and checks the bounds the real tools have.
Status complete_cm_client_options(CmClientOptions& o);

// Runs one client to its end on a running dataplane; `say` gets the tool's progress lines.
Result<CmClientResult> run_cm_client(dp::Dataplane& dp, CmService& cm, Connector& conn, const CmClientOptions& o,
                                     const std::function<void(const std::string&)>& say);

// `roce-gen rping|ucmatose|udaddy|rdma_client [EAL args --] --dev PORT --ip ADDR -a|--server ADDR [-C N] [-S N] [-V] [-p PORT]`
int cm_client_main(const std::string& tool, const dp::SplitArgs& split);

}  // namespace roce::client
