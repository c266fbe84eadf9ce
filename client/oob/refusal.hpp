// How a server that will not serve a client says why: the exchanges have no error message, so
// one text line, "REFUSED <reason>\n", goes where the client expects the server's next record,
// and the server closes. roce-gen shows the reason; perftest and ibv_rc_pingpong see a record
// that does not parse (or a short read), and the server prints the same reason on its stderr.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "client/tcp.hpp"

namespace roce::client {

inline constexpr std::string_view kRefusedPrefix = "REFUSED ";

std::string format_refusal(std::string_view reason);
// Best effort, for a connection about to be closed: the line is short, so it never blocks.
void send_refusal(OobChannel& tcp, std::string_view reason);
// When `head` (what came in place of a record, possibly cut short by the server's close) starts
// a refusal: the reason, the rest of its line read from `tcp` when `head` does not hold it all
// (up to 512 bytes, within 1 s).
std::optional<std::string> read_refusal(std::span<const std::byte> head, OobChannel& tcp);

}  // namespace roce::client
