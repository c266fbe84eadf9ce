// ibv_rc_pingpong's exchange (rdma-core libibverbs/examples): the client sends its record, the
// server connects its QP and answers with its own, the client says "done".
#pragma once

#include <functional>

#include "client/oob/records.hpp"
#include "client/tcp.hpp"

namespace roce::app {

Result<PingpongDest> pingpong_client_exchange(TcpStream& tcp, const PingpongDest& mine, int timeout_ms = 30'000);

// `connect` brings the local QP to RTS against the client's record before our record goes out,
// as the real server does.
Result<PingpongDest> pingpong_server_exchange(TcpStream& tcp, const PingpongDest& mine,
                                              const std::function<Status(const PingpongDest&)>& connect,
                                              int timeout_ms = 30'000);

}  // namespace roce::app
