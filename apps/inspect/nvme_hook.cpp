#include "apps/inspect/nvme_hook.hpp"

#include <atomic>

namespace roce::inspect {
namespace {
std::atomic<NvmeDescriber> g_describer{nullptr};
}  // namespace

void set_nvme_describer(NvmeDescriber d) { g_describer.store(d); }
NvmeDescriber nvme_describer() { return g_describer.load(); }

}  // namespace roce::inspect
