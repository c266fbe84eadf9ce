// ibv_rc_pingpong's exchange (rdma-core libibverbs/examples): the client sends its record, the
// server connects its QP and answers with its own, the client says "done". ibv_srq_pingpong's
// is the same with MAX_QP (256) records each way: its QPs' records first (-q of them), the rest
// zeroed (QPN 0), each side sending all 256 whatever its -q.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "client/oob/records.hpp"
#include "client/tcp.hpp"

namespace roce::client {

Result<PingpongDest> pingpong_client_exchange(TcpStream& tcp, const PingpongDest& mine, int timeout_ms = 30'000);

// `connect` brings the local QP to RTS against the client's record before our record goes out,
// as the real server does.
Result<PingpongDest> pingpong_server_exchange(TcpStream& tcp, const PingpongDest& mine,
                                              const std::function<Status(const PingpongDest&)>& connect,
                                              int timeout_ms = 30'000);

inline constexpr std::size_t kSrqPingpongRecords = 256;

// The records after an ibv_srq_pingpong peer's first (already read): the used ones, `first`
// included, in order. A used record after an unused one, or no used record, is an error.
Result<std::vector<PingpongDest>> read_srq_pingpong_records(OobChannel& tcp, const PingpongDest& first,
                                                            int timeout_ms);
// Our records (at most 256), then zeroed ones up to 256, one write each.
Status write_srq_pingpong_records(OobChannel& tcp, std::span<const PingpongDest> mine);

// ibv_srq_pingpong's client side: ours out, the server's (its used ones) in, "done".
Result<std::vector<PingpongDest>> srq_pingpong_client_exchange(OobChannel& tcp, std::span<const PingpongDest> mine,
                                                               int timeout_ms = 30'000);

}  // namespace roce::client
