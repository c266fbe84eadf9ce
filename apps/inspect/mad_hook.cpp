#include "apps/inspect/mad_hook.hpp"

#include <atomic>

namespace roce::inspect {
namespace {
std::atomic<MadDescriber> g_describer{nullptr};
}  // namespace

void set_mad_describer(MadDescriber d) { g_describer.store(d); }
MadDescriber mad_describer() { return g_describer.load(); }

}  // namespace roce::inspect
