// Finds ../shared/captures (the real RoCE captures the conformance tests read) without copying
// them into the repository: ROCE_CAPTURES_DIR if set, else the first "shared/captures" next to
// the source root or one of its ancestors (a worktree sits one level deeper than the main repo).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace roce::test {

#ifndef ROCE_SOURCE_ROOT
#define ROCE_SOURCE_ROOT ""
#endif

// On failure `why` says where it looked, for GTEST_SKIP.
inline std::optional<std::filesystem::path> find_captures_dir(std::string& why) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* env = std::getenv("ROCE_CAPTURES_DIR"); env && *env) {
    if (fs::is_directory(env, ec)) return fs::path(env);
    why = std::string("ROCE_CAPTURES_DIR=") + env + " is not a directory";
    return std::nullopt;
  }
  const char* src = std::getenv("ROCE_SOURCE_ROOT");
  fs::path root = src && *src ? src : ROCE_SOURCE_ROOT;
  if (root.empty()) {
    why = "source root unknown and ROCE_CAPTURES_DIR not set";
    return std::nullopt;
  }
  root = fs::weakly_canonical(root, ec);
  std::string looked;
  for (int up = 0; up < 4 && !root.empty(); ++up) {
    const fs::path candidate = root / "shared" / "captures";
    if (fs::is_directory(candidate, ec)) return candidate;
    looked += (looked.empty() ? "" : ", ") + candidate.string();
    if (root == root.parent_path()) break;
    root = root.parent_path();
  }
  why = "no shared/captures found (looked in " + looked + "); set ROCE_CAPTURES_DIR to run these tests";
  return std::nullopt;
}

}  // namespace roce::test
