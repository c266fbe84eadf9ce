// An NVM subsystem as the target serves it: its NQN, the hosts allowed to connect (none listed
// means any host), and its namespaces by NSID.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lib/nvmf/namespace_store.hpp"
#include "lib/status.hpp"

namespace roce::nvmf {

// NN in Identify Controller: NSIDs 1..kMaxNamespaces are valid, the active ones have a store.
inline constexpr std::uint32_t kMaxNamespaces = 1024;

class Subsystem {
 public:
  Subsystem(std::string nqn, std::string serial) : nqn_(std::move(nqn)), serial_(std::move(serial)) {}

  const std::string& nqn() const { return nqn_; }
  const std::string& serial() const { return serial_; }

  void allow_host(const std::string& hostnqn) { allowed_.insert(hostnqn); }
  void disallow_host(const std::string& hostnqn) { allowed_.erase(hostnqn); }
  bool host_allowed(const std::string& hostnqn) const { return allowed_.empty() || allowed_.count(hostnqn) != 0; }
  const std::set<std::string>& allowed_hosts() const { return allowed_; }

  Status add_namespace(std::uint32_t nsid, std::unique_ptr<NamespaceStore> store);
  Status remove_namespace(std::uint32_t nsid);
  NamespaceStore* find_namespace(std::uint32_t nsid) const;
  std::vector<std::uint32_t> active_nsids() const;

 private:
  std::string nqn_;
  std::string serial_;
  std::set<std::string> allowed_;
  std::map<std::uint32_t, std::unique_ptr<NamespaceStore>> namespaces_;
};

// NQN syntax as the Fabrics spec gives it: "nqn." followed by a date and a reverse domain, or
// the UUID form; at most 223 bytes.
bool valid_nqn(const std::string& nqn);

}  // namespace roce::nvmf
