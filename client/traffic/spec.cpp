#include "client/traffic/spec.hpp"

namespace roce::client {

std::string to_string(Verb v) {
  switch (v) {
    case Verb::Write: return "write";
    case Verb::Read: return "read";
    case Verb::Send: return "send";
    case Verb::Atomic: return "atomic";
    case Verb::AtomicWrite: return "atomic_write";
    case Verb::Flush: return "flush";
  }
  return "unknown";
}

std::optional<Verb> verb_from_string(std::string_view s) {
  for (Verb v : {Verb::Write, Verb::Read, Verb::Send, Verb::Atomic, Verb::AtomicWrite, Verb::Flush})
    if (s == to_string(v)) return v;
  return std::nullopt;
}

std::string to_string(Measure m) { return m == Measure::Bandwidth ? "bw" : "lat"; }

std::string to_string(AtomicOp a) { return a == AtomicOp::CmpAndSwap ? "CMP_AND_SWAP" : "FETCH_AND_ADD"; }

std::optional<AtomicOp> atomic_op_from_string(std::string_view s) {
  for (AtomicOp a : {AtomicOp::FetchAndAdd, AtomicOp::CmpAndSwap})
    if (s == to_string(a)) return a;
  return std::nullopt;
}

}  // namespace roce::client
