// Tells when another process writes a file: inotify on the io_context, at most one call per
// `min_gap`. The daemon watches the LMDB data file so that what `graspd sync` or `graspd import`
// commit reaches live subscribers without a timer waking an idle relay (strfry watches its
// data.mdb the same way).
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

namespace graspd::runtime {

class FileChangeWatch {
 public:
  /// Watches `file` for writes. Throws std::runtime_error naming the file when inotify refuses
  /// (no such file, watch limit reached); the caller then falls back to polling.
  FileChangeWatch(boost::asio::io_context& io, const std::filesystem::path& file,
                  std::chrono::milliseconds min_gap, std::function<void()> on_change);
  /// Stops watching; a call already running on an io thread may still finish.
  ~FileChangeWatch();

  FileChangeWatch(const FileChangeWatch&) = delete;
  FileChangeWatch& operator=(const FileChangeWatch&) = delete;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace graspd::runtime
