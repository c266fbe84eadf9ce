#include "apps/gen/progress_line.hpp"

#include <cstdio>

#include "client/traffic/perftest_text.hpp"

namespace roce::client {

std::string progress_text(const ClientProgress& p, bool gbits) {
  char b[200];
  const double rate = perftest_bw_units(p.bytes_per_s, gbits);
  const char* unit = gbits ? "Gb/sec" : "MB/sec";
  if (p.target_ops > 0)
    std::snprintf(b, sizeof b, " %u B: %llu of %llu ops (%.1f %%), %.0f s, %.2f %s", p.size,
                  static_cast<unsigned long long>(p.done_ops), static_cast<unsigned long long>(p.target_ops),
                  100.0 * static_cast<double>(p.done_ops) / static_cast<double>(p.target_ops), p.elapsed_s, rate, unit);
  else
    std::snprintf(b, sizeof b, " %u B: %.0f of %.0f s, %llu ops, %.2f %s", p.size, p.elapsed_s, p.duration_s,
                  static_cast<unsigned long long>(p.done_ops), rate, unit);
  return b;
}

void ProgressLine::show(const std::string& text) {
  if (!enabled_) return;
  // Carriage return, the text, erase to the end of the line: the line is rewritten in place.
  std::fprintf(stderr, "\r%s\033[K", text.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::clear() {
  if (!shown_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace roce::client
