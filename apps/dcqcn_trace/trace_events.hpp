// One line of dcqcn-trace input: `<t_us> cnp`, `<t_us> sent <bytes>` or `<t_us> end`; blank
// lines and lines starting with '#' are skipped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace roce::trace {

enum class EventKind : std::uint8_t { Cnp, Sent, End };

struct TraceEvent {
  std::int64_t t_us = 0;
  EventKind kind = EventKind::Cnp;
  std::uint64_t bytes = 0;  // Sent only
};

enum class LineStatus : std::uint8_t { Event, Skip, Error };

struct ParsedLine {
  LineStatus status = LineStatus::Skip;
  TraceEvent event{};
  std::string error;  // LineStatus::Error: what is wrong, without the line number
};

ParsedLine parse_line(std::string_view line);

std::string to_string(EventKind k);
std::string to_string(LineStatus s);

}  // namespace roce::trace
