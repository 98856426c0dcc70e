// A temporary directory for a test: created empty and unique (mkdtemp), removed with everything in
// it when the object goes out of scope.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace graspd::test {

class TempDir {
 public:
  /// Creates `<parent>/<prefix>-XXXXXX` (parent: the system temp dir); throws when that fails.
  explicit TempDir(const std::string& prefix = "graspd-test",
                   const std::filesystem::path& parent = std::filesystem::temp_directory_path()) {
    auto pattern = (parent / (prefix + "-XXXXXX")).string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  /// The path of `name` inside the directory, as a string.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace graspd::test
