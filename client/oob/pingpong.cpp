#include "client/oob/pingpong.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>

#include "client/oob/refusal.hpp"

namespace roce::client {

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

Result<std::vector<PingpongDest>> read_srq_pingpong_records(OobChannel& tcp, const PingpongDest& first,
                                                            int timeout_ms) {
  std::vector<PingpongDest> used;
  if (first.qpn != 0) used.push_back(first);
  bool ended = first.qpn == 0;
  // One deadline for all of them: a peer dripping records cannot hold the exchange longer.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (std::size_t i = 1; i < kSrqPingpongRecords; ++i) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    std::array<std::byte, kPingpongRecordBytes> in{};
    if (Status s = tcp.read_exact(in, static_cast<int>(std::max<std::int64_t>(left.count(), 0))); !s)
      return make_error(s.error().code, "ibv_srq_pingpong record " + std::to_string(i + 1) + " of " +
                                            std::to_string(kSrqPingpongRecords) + ": " + s.error().message);
    auto d = parse_pingpong(in);
    if (!d)
      return make_error(d.error().code, "ibv_srq_pingpong record " + std::to_string(i + 1) + ": " + d.error().message);
    if (d->qpn == 0) {
      ended = true;
      continue;
    }
    if (ended)
      return make_error(EPROTO, "ibv_srq_pingpong record " + std::to_string(i + 1) + " names QP " +
                                    std::to_string(d->qpn) + " after an unused record (QPN 0): the used ones come first");
    used.push_back(*d);
  }
  if (used.empty()) return make_error(EPROTO, "every ibv_srq_pingpong record is unused (QPN 0): the peer has no QP");
  return used;
}

Status write_srq_pingpong_records(OobChannel& tcp, std::span<const PingpongDest> mine) {
  if (mine.size() > kSrqPingpongRecords)
    return make_error(EINVAL, std::to_string(mine.size()) + " QPs: ibv_srq_pingpong exchanges at most " +
                                  std::to_string(kSrqPingpongRecords));
  for (std::size_t i = 0; i < kSrqPingpongRecords; ++i) {
    const auto out = format_pingpong(i < mine.size() ? mine[i] : PingpongDest{});
    if (Status s = tcp.write_all(out); !s) return s;
  }
  return {};
}

Result<std::vector<PingpongDest>> srq_pingpong_client_exchange(OobChannel& tcp, std::span<const PingpongDest> mine,
                                                               int timeout_ms) {
  if (Status s = write_srq_pingpong_records(tcp, mine); !s) return s.error();
  std::array<std::byte, kPingpongRecordBytes> in{};
  const Status got = tcp.read_exact(in, timeout_ms);
  if (auto why = read_refusal(in, tcp)) return make_error(ECONNREFUSED, "the server refused: " + *why);
  if (!got) return got.error();
  auto first = parse_pingpong(in);
  if (!first) return first.error();
  auto remote = read_srq_pingpong_records(tcp, *first, timeout_ms);
  if (!remote) return remote;
  if (Status s = tcp.write_all(std::as_bytes(std::span{kDone})); !s) return s.error();
  return remote;
}

}  // namespace roce::client
