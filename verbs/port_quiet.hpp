// How long the in-process device's port has been quiet, for roce-verbsd's control loop (a
// client of libroce-verbs.so that sees only its exported functions): the loop naps only once
// both its rings and the port have been quiet for a while (service.cpp, run()).
#pragma once

#include <cstdint>

// Nanoseconds since a step of the device last received a frame or had something to send; -1
// when no device runs in this process.
extern "C" std::int64_t roce_verbs_port_quiet_ns();
