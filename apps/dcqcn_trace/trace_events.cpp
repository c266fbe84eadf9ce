#include "apps/dcqcn_trace/trace_events.hpp"

#include <charconv>
#include <vector>

namespace roce::trace {

namespace {

// Times stay far below the nanosecond limit of the clock (about 292 years).
constexpr std::int64_t kMaxTimeUs = 1'000'000'000'000'000;

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

template <typename T>
bool parse_unsigned(std::string_view s, T& out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size();
}

ParsedLine error(std::string msg) { return {LineStatus::Error, {}, std::move(msg)}; }

}  // namespace

ParsedLine parse_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const auto tokens = split(line);
  if (tokens.empty() || tokens[0][0] == '#') return {};
  ParsedLine p{LineStatus::Event, {}, {}};
  if (!parse_unsigned(tokens[0], p.event.t_us) || p.event.t_us > kMaxTimeUs)
    return error("time '" + std::string(tokens[0]) + "' is not a whole number of microseconds");
  if (tokens.size() < 2) return error("missing event after the time (expected cnp, sent or end)");
  const std::string_view ev = tokens[1];
  std::size_t expected_tokens = 2;
  if (ev == "cnp") {
    p.event.kind = EventKind::Cnp;
  } else if (ev == "end") {
    p.event.kind = EventKind::End;
  } else if (ev == "sent") {
    p.event.kind = EventKind::Sent;
    expected_tokens = 3;
    if (tokens.size() < 3) return error("'sent' needs a byte count");
    if (!parse_unsigned(tokens[2], p.event.bytes))
      return error("byte count '" + std::string(tokens[2]) + "' is not a whole number");
  } else {
    return error("unknown event '" + std::string(ev) + "' (expected cnp, sent or end)");
  }
  if (tokens.size() > expected_tokens)
    return error("unexpected '" + std::string(tokens[expected_tokens]) + "' after the event");
  return p;
}

std::string to_string(EventKind k) {
  switch (k) {
    case EventKind::Cnp: return "cnp";
    case EventKind::Sent: return "sent";
    case EventKind::End: return "end";
  }
  return "unknown";
}

std::string to_string(LineStatus s) {
  switch (s) {
    case LineStatus::Event: return "event";
    case LineStatus::Skip: return "skip";
    case LineStatus::Error: return "error";
  }
  return "unknown";
}

}  // namespace roce::trace
