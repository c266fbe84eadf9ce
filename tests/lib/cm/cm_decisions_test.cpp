// The CM's pure decisions as tables, and the promise that every move they lead to is one the
// transition table allows.
#include <gtest/gtest.h>

#include "lib/cm/cm_decisions.hpp"

namespace roce::cm {
namespace {
}  // namespace
}  // namespace roce::cm
