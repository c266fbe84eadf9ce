// An NVM subsystem as the target serves it: its NQN, the hosts allowed to connect, and its
// namespaces by NSID. A new subsystem admits any host (nvmet's attr_allow_any_host); the first
// allowed host makes it admit listed hosts only, and removing the last one then admits none
// (never any host again by accident): set_allow_any_host(true) opens it again.
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

  void allow_host(const std::string& hostnqn) {
    allowed_.insert(hostnqn);
    allow_any_ = false;
  }
  // False when the host was not listed.
  bool disallow_host(const std::string& hostnqn) { return allowed_.erase(hostnqn) != 0; }
  void set_allow_any_host(bool any) { allow_any_ = any; }
  bool allows_any_host() const { return allow_any_; }
  bool host_allowed(const std::string& hostnqn) const { return allow_any_ || allowed_.count(hostnqn) != 0; }
  const std::set<std::string>& allowed_hosts() const { return allowed_; }

  Status add_namespace(std::uint32_t nsid, std::unique_ptr<NamespaceStore> store);
  Status remove_namespace(std::uint32_t nsid);
  NamespaceStore* find_namespace(std::uint32_t nsid) const;
  std::vector<std::uint32_t> active_nsids() const;

 private:
  std::string nqn_;
  std::string serial_;
  std::set<std::string> allowed_;
  bool allow_any_ = true;
  std::map<std::uint32_t, std::shared_ptr<NamespaceStore>> namespaces_;  // shared: zero-copy transfers
};

// NQN syntax as the Fabrics spec gives it: "nqn." followed by a date and a reverse domain, or
// the UUID form; at most 223 bytes.
bool valid_nqn(const std::string& nqn);

}  // namespace roce::nvmf
