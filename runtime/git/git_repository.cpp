#include "runtime/git/git_repository.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <system_error>

#include "messages/nostr/nip19.hpp"
#include "messages/relay_url.hpp"

namespace graspd::runtime::git {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view repository_config =
    "[core]\n"
    "\trepositoryformatversion = 0\n"
    "\tfilemode = true\n"
    "\tbare = true\n"
    "[transfer]\n"
    "\tfsckObjects = true\n"
    "[receive]\n"
    "\tdenyNonFastForwards = false\n"
    "\tdenyDeletes = false\n"
    "\tadvertisePushOptions = false\n"
    "[uploadpack]\n"
    "\tallowTipSHA1InWant = true\n"
    "\tallowReachableSHA1InWant = true\n"
    "\tallowFilter = true\n";

/// A real directory (lstat: a symlink is not one).
bool is_real_directory(const fs::path& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool write_file(const fs::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  return static_cast<bool>(out);
}

/// Writes a new bare repository's directories and files (what `git init --bare` writes) at `path`,
/// which must not exist; says what failed, if anything.
std::optional<std::string> lay_out_repository(const fs::path& path) {
  std::error_code ec;
  for (const char* dir :
       {"", "objects", "objects/info", "objects/pack", "refs", "refs/heads", "refs/tags", "info"})
    if (!fs::create_directory(path / dir, ec) || ec) return "cannot lay out the repository";
  if (!write_file(path / "HEAD", "ref: refs/heads/main\n") ||
      !write_file(path / "config", repository_config) ||
      !write_file(path / "description", "Hosted by graspd.\n"))
    return "cannot write the repository files";
  return std::nullopt;
}

std::string random_suffix() {
  static std::atomic<std::uint64_t> counter{0};
  std::random_device device;
  return std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
         std::to_string(device());
}

}  // namespace

bool is_valid_identifier(std::string_view identifier) {
  if (identifier.empty() || identifier == "." || identifier == ".." ||
      identifier.size() > max_identifier_bytes)
    return false;
  for (unsigned char c : identifier)
    if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f) return false;
  return true;
}

bool is_git_path(std::string_view target, bool pr_submissions) {
  return target.rfind("/npub1", 0) == 0 ||
         (pr_submissions && target.rfind(pr_submissions_prefix, 0) == 0);
}

GitTargetParse parse_git_target(std::string_view target) {
  GitTargetParse out;
  auto query_at = target.find('?');
  auto path = target.substr(0, query_at);
  auto query =
      query_at == std::string_view::npos ? std::string_view{} : target.substr(query_at + 1);
  if (path.empty() || path.front() != '/') return out;
  auto space = RepositorySpace::hosted;
  if (path.rfind(pr_submissions_prefix, 0) == 0) {
    space = RepositorySpace::pr_submissions;
    path.remove_prefix(pr_submissions_prefix.size() - 1);  // keeps the '/' before the npub
  }
  path.remove_prefix(1);
  auto slash = path.find('/');
  if (slash == std::string_view::npos) return out;
  auto owner = nostr::decode_npub(path.substr(0, slash));
  if (!owner) return out;
  path.remove_prefix(slash + 1);
  slash = path.find('/');
  auto raw_repository = path.substr(0, slash);
  auto rest = slash == std::string_view::npos ? std::string_view{} : path.substr(slash);
  auto decoded = percent_decode(raw_repository);
  if (!decoded) {
    out.status = 400;
    return out;
  }
  constexpr std::string_view suffix = ".git";
  if (decoded->size() <= suffix.size() ||
      decoded->compare(decoded->size() - suffix.size(), suffix.size(), suffix) != 0)
    return out;
  decoded->resize(decoded->size() - suffix.size());
  if (!is_valid_identifier(*decoded)) return out;

  GitTarget result;
  result.repository = RepositoryRef{*owner, std::move(*decoded), space};
  if (rest.empty()) {
    // A submission area has no page (GRASP-06 serves only the two git services).
    if (!query.empty() || space == RepositorySpace::pr_submissions) return out;
    result.endpoint = GitEndpoint::page;
  } else if (rest == "/info/refs") {
    // Only the smart protocol: exactly one `service=` parameter naming one of the two services.
    std::string service;
    while (!query.empty()) {
      auto amp = query.find('&');
      auto pair = query.substr(0, amp);
      if (pair.rfind("service=", 0) == 0) {
        if (!service.empty()) return out;
        service = std::string(pair.substr(8));
      }
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
    if (service != "git-upload-pack" && service != "git-receive-pack") return out;
    result.endpoint = GitEndpoint::info_refs;
    result.service = std::move(service);
  } else if (rest == "/git-upload-pack" && query.empty()) {
    result.endpoint = GitEndpoint::upload_pack;
    result.service = "git-upload-pack";
  } else if (rest == "/git-receive-pack" && query.empty()) {
    result.endpoint = GitEndpoint::receive_pack;
    result.service = "git-receive-pack";
  } else {
    return out;
  }
  out.target = std::move(result);
  out.status = 200;
  return out;
}

Repositories::Repositories(const fs::path& root) : root_(fs::absolute(root).lexically_normal()) {
  if (!root_.empty() && root_.filename().empty()) root_ = root_.parent_path();
}

void Repositories::prepare() const {
  std::error_code error;
  for (const auto& dir : {root_, home_dir(), hooks_dir()}) {
    fs::create_directories(dir, error);
    if (error || !fs::is_directory(dir))
      throw std::runtime_error("cannot create git data directory " + dir.string() + ": " +
                               error.message());
  }
  if (is_real_directory(empty_repository())) return;
  auto temporary = root_ / (".creating-" + random_suffix());
  auto failure = lay_out_repository(temporary);
  if (!failure && ::rename(temporary.c_str(), empty_repository().c_str()) != 0 &&
      !is_real_directory(empty_repository()))
    failure = std::string("rename: ") + std::strerror(errno);
  fs::remove_all(temporary, error);
  if (failure)
    throw std::runtime_error("cannot create " + empty_repository().string() + ": " + *failure);
}

fs::path Repositories::path_of(const RepositoryRef& name) const {
  if (name.is_pr_submissions())
    return pr_submissions_dir() / nostr::to_hex(name.owner) / (name.identifier + ".git");
  return root_ / nostr::encode_npub(name.owner) / (name.identifier + ".git");
}

bool Repositories::exists(const RepositoryRef& name) const {
  if (!is_valid_identifier(name.identifier)) return false;
  auto path = path_of(name);
  if (name.is_pr_submissions() && !is_real_directory(pr_submissions_dir())) return false;
  return is_real_directory(path.parent_path()) && is_real_directory(path);
}

Result<void, GitFailure> Repositories::create(const RepositoryRef& name) const {
  auto fail = [](std::string why) {
    return GitFailure{git_errc::repository_not_created, std::move(why)};
  };
  if (!is_valid_identifier(name.identifier))
    return GitFailure{git_errc::invalid_identifier, "invalid identifier"};
  if (exists(name)) return {};
  auto final_path = path_of(name);
  auto owner_dir = final_path.parent_path();
  if (name.is_pr_submissions()) {
    auto area = pr_submissions_dir();
    if (::mkdir(area.c_str(), 0755) != 0 && errno != EEXIST)
      return fail("mkdir prs: " + std::string(std::strerror(errno)));
    if (!is_real_directory(area)) return fail("prs is not a directory");
  }
  if (::mkdir(owner_dir.c_str(), 0755) != 0 && errno != EEXIST)
    return fail("mkdir " + owner_dir.filename().string() + ": " + std::strerror(errno));
  if (!is_real_directory(owner_dir)) return fail("owner directory is not a directory");
  // Temporary names never end in ".git", so they cannot be taken for a repository.
  auto temporary = owner_dir / (".creating-" + random_suffix());
  std::error_code ec;
  if (auto failure = lay_out_repository(temporary)) {
    fs::remove_all(temporary, ec);
    return fail(*failure);
  }
  if (::rename(temporary.c_str(), final_path.c_str()) != 0) {
    int why = errno;
    fs::remove_all(temporary, ec);
    // Someone created it meanwhile: that one stands.
    if (exists(name)) return {};
    return fail(std::string("rename: ") + std::strerror(why));
  }
  return {};
}

bool Repositories::remove(const RepositoryRef& name) const {
  if (!exists(name)) return true;
  auto path = path_of(name);
  auto temporary = path.parent_path() / (".deleting-" + random_suffix());
  if (::rename(path.c_str(), temporary.c_str()) != 0) return !exists(name);
  std::error_code ec;
  fs::remove_all(temporary, ec);
  return true;
}

bool Repositories::set_head(const RepositoryRef& name, std::string_view branch) const {
  if (!exists(name)) return false;
  auto path = path_of(name);
  auto temporary = path / ("HEAD.graspd-" + random_suffix());
  if (!write_file(temporary, "ref: refs/heads/" + std::string(branch) + "\n")) return false;
  if (::rename(temporary.c_str(), (path / "HEAD").c_str()) != 0) {
    std::error_code ec;
    fs::remove(temporary, ec);
    return false;
  }
  return true;
}

std::size_t Repositories::count() const {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& owner : fs::directory_iterator(root_, ec)) {
    if (owner.path().filename().string().rfind("npub1", 0) != 0) continue;
    for (const auto& repo : fs::directory_iterator(owner.path(), ec)) {
      auto name = repo.path().filename().string();
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".git") == 0) ++n;
    }
  }
  return n;
}

std::vector<RepositoryRef> Repositories::hosted() const {
  std::vector<RepositoryRef> out;
  std::error_code ec;
  for (const auto& owner_dir : fs::directory_iterator(root_, ec)) {
    auto owner = nostr::decode_npub(owner_dir.path().filename().string());
    if (!owner) continue;
    for (const auto& repo : fs::directory_iterator(owner_dir.path(), ec)) {
      auto name = repo.path().filename().string();
      if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".git") != 0) continue;
      RepositoryRef repository{*owner, name.substr(0, name.size() - 4)};
      if (exists(repository)) out.push_back(std::move(repository));
    }
  }
  return out;
}

std::uint64_t Repositories::bytes_of(const RepositoryRef& name) const {
  if (!exists(name)) return 0;
  std::uint64_t bytes = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(path_of(name), ec); !ec && it != fs::end(it);
       it.increment(ec))
    if (it->is_regular_file(ec)) bytes += it->file_size(ec);
  return bytes;
}

std::vector<RepositoryRef> Repositories::pr_submission_areas() const {
  std::vector<RepositoryRef> out;
  std::error_code ec;
  for (const auto& submitter : fs::directory_iterator(pr_submissions_dir(), ec)) {
    nostr::Pubkey owner;
    if (!nostr::from_hex(submitter.path().filename().string(), owner)) continue;
    for (const auto& repo : fs::directory_iterator(submitter.path(), ec)) {
      auto name = repo.path().filename().string();
      if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".git") != 0) continue;
      RepositoryRef area{owner, name.substr(0, name.size() - 4), RepositorySpace::pr_submissions};
      if (exists(area)) out.push_back(std::move(area));
    }
  }
  return out;
}

std::vector<std::string> Repositories::git_environment() const {
  auto home = home_dir().string();
  return {"PATH=/usr/local/bin:/usr/bin:/bin",
          "HOME=" + home,
          "XDG_CONFIG_HOME=" + home,
          "GIT_CONFIG_NOSYSTEM=1",
          "GIT_TERMINAL_PROMPT=0",
          "LC_ALL=C"};
}

}  // namespace graspd::runtime::git
