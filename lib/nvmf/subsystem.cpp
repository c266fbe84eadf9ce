#include "lib/nvmf/subsystem.hpp"

namespace roce::nvmf {

Status Subsystem::add_namespace(std::uint32_t nsid, std::unique_ptr<NamespaceStore> store) {
  if (nsid == 0 || nsid > kMaxNamespaces)
    return make_error(EINVAL, "NSID " + std::to_string(nsid) + " outside 1.." + std::to_string(kMaxNamespaces));
  if (!store) return make_error(EINVAL, "namespace " + std::to_string(nsid) + " has no backing");
  if (namespaces_.count(nsid)) return make_error(EEXIST, "NSID " + std::to_string(nsid) + " already in " + nqn_);
  namespaces_.emplace(nsid, std::move(store));
  return {};
}

Status Subsystem::remove_namespace(std::uint32_t nsid) {
  if (namespaces_.erase(nsid) == 0) return make_error(ENOENT, "no NSID " + std::to_string(nsid) + " in " + nqn_);
  return {};
}

NamespaceStore* Subsystem::find_namespace(std::uint32_t nsid) const {
  const auto it = namespaces_.find(nsid);
  return it == namespaces_.end() ? nullptr : it->second.get();
}

std::vector<std::uint32_t> Subsystem::active_nsids() const {
  std::vector<std::uint32_t> out;
  for (const auto& [nsid, store] : namespaces_) out.push_back(nsid);
  return out;
}

bool valid_nqn(const std::string& nqn) {
  if (nqn.size() < 5 || nqn.size() > 223 || nqn.compare(0, 4, "nqn.") != 0) return false;
  for (char c : nqn)
    if (c < 0x21 || c > 0x7E) return false;
  return true;
}

}  // namespace roce::nvmf
