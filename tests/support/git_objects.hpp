// Damage for the tests of git data repair: what a lost pack leaves behind.
#pragma once

#include <filesystem>
#include <string>

namespace graspd::test {

/// Deletes every object of the bare repository at `repository` (loose objects and packs): its refs
/// then name objects that are not there.
inline void delete_git_objects(const std::string& repository) {
  namespace fs = std::filesystem;
  for (const auto& entry : fs::directory_iterator(repository + "/objects")) {
    auto name = entry.path().filename().string();
    if (name.size() == 2) fs::remove_all(entry.path());  // loose objects: objects/xx/
  }
  for (const auto& entry : fs::directory_iterator(repository + "/objects/pack"))
    fs::remove(entry.path());
}

}  // namespace graspd::test
