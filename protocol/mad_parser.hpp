// Bounds-checked MAD parser for the CM class. A MAD it refuses comes back with the reason, for
// the caller to count and drop; the header is filled in whenever the 24 bytes were there, so a
// class agent can still answer a Get it does not support with an error status.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/be.hpp"
#include "protocol/mad.hpp"

namespace roce::proto {

enum class MadError : std::uint8_t {
  None,
  Truncated,            // fewer than 256 bytes
  WrongLength,          // more than 256 bytes: a GSI MAD is exactly 256
  BadBaseVersion,       // base version is not 1
  NotCmClass,           // management class is not 0x07
  BadClassVersion,      // CM class version is not 2
  UnknownAttribute,     // an attribute ID the CM class does not define
  UnsupportedMethod,    // a method the attribute does not take (CM messages are Send only)
  ReservedValue,        // a field holds a value the table reserves (REJ/MRA message 3)
  InfoLengthTooLarge,   // REJ ARI length, SIDR_REP or APR additional information beyond 72 bytes
  Count,
};

struct ParsedMad {
  MadHeader header{};
  bool has_header = false;
  CmAttribute attribute = CmAttribute::ClassPortInfo;
  ByteSpan data{};  // the 232 bytes after the header

  // The attribute's payload struct (cm_*.hpp); T must be the one for `attribute`.
  template <typename T>
  T as() const noexcept {
    static_assert(sizeof(T) == kMadDataBytes);
    return load_header<T>(data, 0);
  }
};

MadError parse_mad(ByteSpan mad, ParsedMad& out) noexcept;

// The method(s) an attribute takes: Send for CM messages, Get/Set/GetResp for ClassPortInfo.
bool method_allowed(CmAttribute a, std::uint8_t method_byte) noexcept;

std::string to_string(MadError e);

}  // namespace roce::proto
