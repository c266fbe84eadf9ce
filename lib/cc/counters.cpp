#include "lib/cc/counters.hpp"

namespace roce::cc {

std::string to_string(CnpDisposition d) {
  switch (d) {
    case CnpDisposition::Apply: return "apply";
    case CnpDisposition::IgnoredUnknownQp: return "ignored_unknown_qp";
    case CnpDisposition::IgnoredCcDisabled: return "ignored_cc_disabled";
  }
  return "unknown";
}

}  // namespace roce::cc
