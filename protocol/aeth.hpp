// AETH syndrome: ACK with a credit code, RNR NAK with a timer code, or NAK with an error code.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace roce::proto {

enum class AckType : std::uint8_t { Ack = 0, RnrNak = 1, Reserved = 2, Nak = 3 };

enum class NakCode : std::uint8_t {
  PsnSequenceError = 0,
  InvalidRequest = 1,
  RemoteAccessError = 2,
  RemoteOperationalError = 3,
  InvalidRdRequest = 4,
};

inline constexpr std::uint8_t kCreditInvalid = 0x1F;  // "no end-to-end credits": what rxe sends

// Credits granted by each ACK credit code 0x00..0x1E.
inline constexpr std::array<std::uint32_t, 31> kCreditTable{
    0,   1,   2,    3,    4,    6,    8,    12,   16,    24,    32,    48,    64,    96,    128, 192,
    256, 384, 512,  768,  1024, 1536, 2048, 3072, 4096,  6144,  8192,  12288, 16384, 24576, 32768};

// Minimum RNR wait of each 5-bit RNR timer code, in nanoseconds (code 0 is the longest).
inline constexpr std::array<std::uint64_t, 32> kRnrTimerNs{
    655'360'000, 10'000,     20'000,     30'000,     40'000,     60'000,     80'000,     120'000,
    160'000,     240'000,    320'000,    480'000,    640'000,    960'000,    1'280'000,  1'920'000,
    2'560'000,   3'840'000,  5'120'000,  7'680'000,  10'240'000, 15'360'000, 20'480'000, 30'720'000,
    40'960'000,  61'440'000, 81'920'000, 122'880'000, 163'840'000, 245'760'000, 327'680'000, 491'520'000};

struct Syndrome {
  std::uint8_t raw = 0;

  constexpr AckType type() const { return static_cast<AckType>((raw >> 5) & 0x3); }
  constexpr std::uint8_t value() const { return raw & 0x1F; }
  constexpr bool is_ack() const { return type() == AckType::Ack; }
  constexpr bool is_rnr_nak() const { return type() == AckType::RnrNak; }
  constexpr bool is_nak() const { return type() == AckType::Nak; }
  constexpr NakCode nak_code() const { return static_cast<NakCode>(value()); }
  // Credits an ACK grants, or nullopt for the invalid/unlimited code 0x1F.
  constexpr std::optional<std::uint32_t> credits() const {
    if (value() == kCreditInvalid) return std::nullopt;
    return kCreditTable[value()];
  }
  constexpr std::uint64_t rnr_wait_ns() const { return kRnrTimerNs[value()]; }

  static constexpr Syndrome ack(std::uint8_t credit_code = kCreditInvalid) {
    return Syndrome{static_cast<std::uint8_t>(credit_code & 0x1F)};
  }
  static constexpr Syndrome rnr_nak(std::uint8_t timer_code) {
    return Syndrome{static_cast<std::uint8_t>(0x20 | (timer_code & 0x1F))};
  }
  static constexpr Syndrome nak(NakCode c) {
    return Syndrome{static_cast<std::uint8_t>(0x60 | static_cast<std::uint8_t>(c))};
  }
  friend constexpr bool operator==(Syndrome, Syndrome) = default;
};

// Largest credit code whose credit count does not exceed `available`.
constexpr std::uint8_t credit_code_for(std::uint32_t available) {
  std::uint8_t code = 0;
  for (std::uint8_t i = 0; i < kCreditTable.size(); ++i)
    if (kCreditTable[i] <= available) code = i;
  return code;
}

static_assert(Syndrome::nak(NakCode::PsnSequenceError).raw == 0x60);
static_assert(Syndrome::rnr_nak(12).raw == 0x2C);
static_assert(Syndrome{0x1F}.is_ack() && !Syndrome{0x1F}.credits());

std::string to_string(AckType t);
std::string to_string(NakCode c);
std::string to_string(Syndrome s);

}  // namespace roce::proto
