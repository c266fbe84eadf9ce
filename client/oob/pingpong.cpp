#include "client/oob/pingpong.hpp"

#include <array>
#include <cstring>

#include "client/oob/refusal.hpp"

namespace roce::app {

namespace {
constexpr char kDone[] = {'d', 'o', 'n', 'e', '\0'};
}

Result<PingpongDest> pingpong_client_exchange(TcpStream& tcp, const PingpongDest& mine, int timeout_ms) {
  const auto out = format_pingpong(mine);
  if (Status s = tcp.write_all(out); !s) return s.error();
  std::array<std::byte, kPingpongRecordBytes> in{};
  const Status got = tcp.read_exact(in, timeout_ms);
  if (auto why = read_refusal(in, tcp)) return make_error(ECONNREFUSED, "the server refused: " + *why);
  if (!got) return got.error();
  auto remote = parse_pingpong(in);
  if (!remote) return remote;
  if (Status s = tcp.write_all(std::as_bytes(std::span{kDone})); !s) return s.error();
  return remote;
}

Result<PingpongDest> pingpong_server_exchange(TcpStream& tcp, const PingpongDest& mine,
                                              const std::function<Status(const PingpongDest&)>& connect,
                                              int timeout_ms) {
  std::array<std::byte, kPingpongRecordBytes> in{};
  if (Status s = tcp.read_exact(in, timeout_ms); !s) return s.error();
  auto remote = parse_pingpong(in);
  if (!remote) return remote;
  if (Status s = connect(*remote); !s) return s.error();
  const auto out = format_pingpong(mine);
  if (Status s = tcp.write_all(out); !s) return s.error();
  std::array<std::byte, sizeof kDone> done{};
  if (Status s = tcp.read_exact(done, timeout_ms); !s) return s.error();
  if (std::memcmp(done.data(), kDone, sizeof kDone) != 0)
    return make_error(EPROTO, "the client did not finish the exchange with \"done\"");
  return remote;
}

}  // namespace roce::app
