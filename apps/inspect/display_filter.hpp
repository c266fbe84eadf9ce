// -Y: a small display filter language over the fields of fields.hpp, in tshark's spirit:
//
//   expr    := term { (or | "||") term }
//   term    := factor { (and | "&&") factor }
//   factor  := (not | "!") factor | "(" expr ")" | test
//   test    := FIELD [ OP VALUE | in "{" VALUE... "}" ]
//   OP      := == != < <= > >= (or eq ne lt le gt ge)
//
// A bare FIELD is true when the frame has it and, for a yes/no field, it is yes. A comparison
// with a field the frame does not have is false (so `not psn == 5` holds for an ARP frame).
// VALUEs are numbers (decimal or 0x hex), names (opcode == RC_ACKNOWLEDGE, icrc == bad), IP
// addresses or prefixes (ip.src == 10.0.0.0/24), or "quoted text". `ip.addr` matches the source
// or the destination.
#pragma once

#include <memory>
#include <string>

#include "apps/inspect/fields.hpp"
#include "lib/status.hpp"

namespace roce::inspect {

class DisplayFilter {
 public:
  // The error says where and why: "column 5: unknown field 'qpm' (did you mean: qpn)".
  static Result<DisplayFilter> compile(const std::string& text);

  bool matches(const FrameView& f, const FieldContext& c) const;
  const std::string& text() const { return text_; }

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace roce::inspect
