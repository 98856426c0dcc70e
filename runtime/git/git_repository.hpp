// Git hosting, the file-system side (docs/spec/git-hosting.md §2, §4, §9.6–9.7): which URL names
// which repository, the identifier rules, and the bare repositories under NGIT_GIT_DATA_PATH
// (`<root>/<npub>/<identifier>.git`). No git process runs here: a repository is laid out by hand
// (the few files `git init --bare` writes), so creating one costs a few system calls and can run
// before the `OK` of its announcement.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/errors.hpp"
#include "messages/nostr/event.hpp"
#include "messages/nostr/nip34.hpp"

namespace graspd::runtime::git {

/// Longest identifier hosted (bytes); longer ones are never given a repository (§4.3).
inline constexpr std::size_t max_identifier_bytes = 250;

/// docs/spec/protocol.md §3.2 plus §4.3: not empty, not `.` or `..`, no `/`, `\`, NUL or other
/// control character, at most max_identifier_bytes.
bool is_valid_identifier(std::string_view identifier);

using nostr::nip34::RepositoryRef;
using nostr::nip34::RepositorySpace;

enum class GitEndpoint { page, info_refs, upload_pack, receive_pack };

struct GitTarget {
  RepositoryRef repository;
  GitEndpoint endpoint = GitEndpoint::page;
  /// For info_refs: "git-upload-pack" or "git-receive-pack"; for the POSTs, the service posted to.
  std::string service;
};

/// A target for the git handler, or the HTTP status to answer (404 not hosted / not a git URL,
/// 400 malformed percent-encoding).
struct GitTargetParse {
  std::optional<GitTarget> target;
  unsigned status = 404;
};

/// The path prefix of GRASP-06 pull-request submissions (`/prs/<npub>/<identifier>.git/...`), and
/// the directory under NGIT_GIT_DATA_PATH that holds them (`prs/<submitter hex>/<identifier>.git`).
inline constexpr std::string_view pr_submissions_prefix = "/prs/";

/// True when the request path's first segment looks like an npub, or is `prs` while GRASP-06 is
/// on: such requests belong to git hosting (every answer, errors included, comes from its handler).
bool is_git_path(std::string_view target, bool pr_submissions = false);

/// §2.2: segment 1 decodes as an npub (after a `/prs/` prefix: the pr_submissions space, which has
/// no page); segment 2 is percent-decoded once, ends in `.git` (stripped
/// exactly once) and the rest is a valid identifier; the rest of the path is nothing (the
/// repository page), `/info/refs?service=git-upload-pack|git-receive-pack`, `/git-upload-pack` or
/// `/git-receive-pack`. Everything else (dumb HTTP, other services) is 404.
GitTargetParse parse_git_target(std::string_view target);

/// The bare repositories under one root directory. Thread-safe (no state beyond the paths).
class Repositories {
 public:
  /// `root` = NGIT_GIT_DATA_PATH; made absolute here.
  explicit Repositories(const std::filesystem::path& root);

  /// Creates the root and graspd's own directories in it: `.home` (HOME of every git process) and
  /// `.hooks` (an empty core.hooksPath). Throws std::runtime_error when it cannot.
  void prepare() const;

  /// `<root>/<npub>/<identifier>.git`, or `<root>/prs/<hex>/<identifier>.git` for a submission
  /// area; the identifier must be valid.
  std::filesystem::path path_of(const RepositoryRef& name) const;

  /// True when the repository exists as a real directory, reached without following a symlink.
  bool exists(const RepositoryRef& name) const;

  /// Creates the bare repository (under a temporary name, then renamed, §4.4). Succeeds when it
  /// exists afterwards (already there counts); the failure says why not.
  Result<void, GitFailure> create(const RepositoryRef& name) const;

  /// Deletes the repository: renamed to a temporary name first (a git client never sees half of
  /// it, §4.4), then removed. True when it is gone afterwards.
  bool remove(const RepositoryRef& name) const;

  /// Points HEAD at refs/heads/<branch> (written to a temporary file, then renamed).
  bool set_head(const RepositoryRef& name, std::string_view branch) const;

  /// The hosted repositories on disk (`<npub>/<identifier>.git`), in no particular order.
  std::vector<RepositoryRef> hosted() const;

  /// Bytes of the files of `name` on disk (0 when it is not there).
  std::uint64_t bytes_of(const RepositoryRef& name) const;

  /// The submission areas on disk (`prs/<hex>/<identifier>.git`).
  std::vector<RepositoryRef> pr_submission_areas() const;

  /// Number of repositories on disk (directories `<npub>/<id>.git`).
  std::size_t count() const;

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path home_dir() const { return root_ / ".home"; }
  std::filesystem::path hooks_dir() const { return root_ / ".hooks"; }
  /// GRASP-06 submission areas, one directory per submitter (hex), made on the first push.
  std::filesystem::path pr_submissions_dir() const { return root_ / "prs"; }
  /// An empty bare repository made by prepare() and never written: what an unknown submission
  /// area serves (both services advertise no ref, so a first push can start).
  std::filesystem::path empty_repository() const { return root_ / ".empty.git"; }
  /// The environment of every git process graspd runs (§9.7): PATH, HOME and XDG_CONFIG_HOME in
  /// `.home`, no system config, no terminal prompt, the C locale (git's messages are parsed).
  std::vector<std::string> git_environment() const;

 private:
  std::filesystem::path root_;
};

}  // namespace graspd::runtime::git
