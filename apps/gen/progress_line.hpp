// A live progress line on stderr while a long run goes, when stderr is a terminal: one line
// rewritten in place about once a second, gone before the results print. Piped or under
// --json it prints nothing.
#pragma once

#include <string>

#include "client/perftest_client.hpp"

namespace roce::client {

// " 65536 B: 12000 of 50000 ops (24.0 %), 3 s, 1234.56 MB/sec" or, under -D, " 65536 B: 3 of 10 s, ...".
std::string progress_text(const ClientProgress& p, bool gbits);

class ProgressLine {
 public:
  ProgressLine(bool enabled, bool gbits) : enabled_(enabled), gbits_(gbits) {}
  ~ProgressLine() { clear(); }
  void show(const ClientProgress& p) { show(progress_text(p, gbits_)); }
  void show(const std::string& text);
  // Erases the line (before anything else prints).
  void clear();

 private:
  bool enabled_;
  bool gbits_;
  bool shown_ = false;
};

}  // namespace roce::client
