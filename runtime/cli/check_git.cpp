#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/cli/check_git.hpp"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "messages/nostr/nip19.hpp"
#include "runtime/config/cluster_peers.hpp"
#include "runtime/git/git_fetcher.hpp"
#include "runtime/git/git_http.hpp"
#include "runtime/git/git_repository.hpp"
#include "runtime/ops/log.hpp"
#include "runtime/ops/progress.hpp"
#include "store/git/announcement_sources.hpp"
#include "store/git/git_push.hpp"
#include "store/lmdb/store_view.hpp"

namespace graspd::runtime {

// A named namespace around the file's own names: graspd_runtime is compiled in unity batches.
namespace check_git_impl {

namespace {

namespace fs = std::filesystem;
using ::graspd::git::RefMap;
using ::graspd::git::StateRefs;
using Clock = std::chrono::steady_clock;

constexpr int kNoDifferences = 0;
constexpr int kDifferencesRemain = 1;
constexpr int kUsageOrConfigError = 2;
/// Local git commands (for-each-ref, cat-file, update-ref): as long as the daemon's applier gives.
constexpr std::chrono::seconds kLocalGitTimeout{60};
constexpr std::string_view kCheckGitUsage =
    "usage: graspd check-git [--repair] [--config FILE] [--option VALUE]...\n"
    "Compares every repository's branches and tags with its newest authorising state event;\n"
    "--repair fetches what is missing from the clone URLs and sets the refs. Exit codes: 0 no\n"
    "differences (or all repaired), 1 differences remain, 2 usage or configuration error.\n";

/// One repository directory `<npub>/<identifier>.git`.
struct Hosted {
  git::RepositoryRef name;
  std::string label;  ///< "<npub>/<identifier>.git", as the output names it
  std::string path;
};

/// Every repository under the root, sorted by label. Dot-directories (`.home`, `.hooks`, a
/// creation's temporary name) and directories whose name is no npub (`prs/`, GRASP-06 pull request
/// submissions) hold no hosted repository.
std::vector<Hosted> hosted_repositories(const git::Repositories& repositories) {
  std::vector<Hosted> out;
  std::error_code error;
  for (const auto& owner_dir : fs::directory_iterator(repositories.root(), error)) {
    auto npub = owner_dir.path().filename().string();
    auto owner = npub.starts_with('.') ? std::nullopt : nostr::decode_npub(npub);
    if (!owner || owner_dir.is_symlink(error) || !owner_dir.is_directory(error)) continue;
    for (const auto& entry : fs::directory_iterator(owner_dir.path(), error)) {
      auto file = entry.path().filename().string();
      if (file.starts_with('.') || !file.ends_with(".git")) continue;
      git::RepositoryRef name{*owner, file.substr(0, file.size() - 4)};
      if (!git::is_valid_identifier(name.identifier) || !repositories.exists(name)) continue;
      out.push_back({name, npub + "/" + file, repositories.path_of(name).string()});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Hosted& a, const Hosted& b) { return a.label < b.label; });
  return out;
}

/// Git commands for one repository, on an io_context of its own driven by this thread: each runs
/// to its end (within its timeout) before the next.
class GitSession {
 public:
  GitSession(const git::Repositories& repositories, const std::string& git_binary)
      : runner_{io_.get_executor(), repositories, git_binary} {}

  /// `max_file_bytes` > 0 limits the size of any file the command writes (a copied pack).
  std::optional<git::Collected> run(const std::string& path, std::vector<std::string> args,
                                    std::string input = {}, std::uint64_t max_file_bytes = 0) {
    std::optional<git::Collected> result;
    runner_.run(runner_.argv(path, std::move(args)), std::move(input), kLocalGitTimeout,
                max_file_bytes, [&result](git::Collected done) { result = std::move(done); });
    drive(io_, [&] { return result.has_value(); });
    return result;
  }

  /// Which of `ids` the repository lacks; nullopt when git failed.
  std::optional<std::vector<std::string>> missing(const std::string& path,
                                                  const std::vector<std::string>& ids) {
    std::optional<std::optional<std::vector<std::string>>> result;
    runner_.missing(path, ids, [&result](auto done) { result = std::move(done); });
    drive(io_, [&] { return result.has_value(); });
    return result ? *result : std::nullopt;
  }

  /// Fetches `job` with the daemon's fetcher on an io_context of its own; nullopt when `deadline`
  /// came first. Whatever still runs then (a git fetch, a lookup) is killed before this returns:
  /// the io_context goes last, and the children go with its pending handlers.
  std::optional<git::FetchResult> fetch(git::GitFetcherOptions options, git::FetchJob job,
                                        Clock::time_point deadline) const {
    auto result = std::make_shared<std::optional<git::FetchResult>>();
    boost::asio::io_context io;
    git::GitRunner runner{io.get_executor(), runner_.repositories, runner_.git_binary};
    auto fetcher = std::make_shared<git::GitFetcher>(runner, std::move(options), nullptr);
    job.done = [result](git::FetchResult done) { *result = done; };
    fetcher->request(std::move(job));
    drive(
        io, [&] { return result->has_value(); }, deadline);
    fetcher->stop();
    return *result;
  }

  const git::Repositories& repositories() const { return runner_.repositories; }

 private:
  template <class Done>
  static void drive(boost::asio::io_context& io, Done done,
                    std::optional<Clock::time_point> deadline = std::nullopt) {
    io.restart();
    while (!done()) {
      auto ran = deadline ? io.run_one_until(*deadline) : io.run_one();
      if (ran == 0) break;  // out of work, or the deadline passed
    }
  }

  boost::asio::io_context io_;
  git::GitRunner runner_;
};

/// "<id> <ref>" lines of for-each-ref.
RefMap parse_ref_listing(std::string_view text) {
  RefMap refs;
  while (!text.empty()) {
    auto line = text.substr(0, text.find('\n'));
    if (auto space = line.find(' '); space != std::string_view::npos)
      refs.emplace(std::string(line.substr(space + 1)), std::string(line.substr(0, space)));
    text.remove_prefix(std::min(text.size(), line.size() + 1));
  }
  return refs;
}

std::vector<std::string> state_object_ids(const StateRefs& state) {
  std::set<std::string> ids;
  for (const auto& [ref, id] : state.refs)
    if (::graspd::git::is_object_id(id)) ids.insert(id);
  return {ids.begin(), ids.end()};
}

/// The branch HEAD names ("main" for `ref: refs/heads/main`); empty when it names none.
std::string head_branch_here(const std::string& path) {
  std::ifstream file(fs::path(path) / "HEAD");
  std::string head((std::istreambuf_iterator<char>(file)), {});
  constexpr std::string_view prefix = "ref: refs/heads/";
  if (!head.starts_with(prefix)) return {};
  head.erase(0, prefix.size());
  while (!head.empty() && (head.back() == '\n' || head.back() == '\r')) head.pop_back();
  return head;
}

/// One repository compared with its newest authorising state.
struct Comparison {
  std::optional<StateRefs> state;
  RefMap here;                           ///< refs/heads and refs/tags in the repository
  std::vector<std::string> absent_ids;   ///< the state's objects not in the repository
  std::vector<std::string> differences;  ///< one line each, without the repository's label
  bool unreadable = false;               ///< git could not read the repository
};

void describe_differences(Comparison& found, const std::string& path) {
  const auto& state = *found.state;
  std::set<std::string> absent(found.absent_ids.begin(), found.absent_ids.end());
  for (const auto& [ref, id] : state.refs) {
    if (!::graspd::git::is_valid_ref_name(ref)) continue;  // the applier never sets those either
    auto it = found.here.find(ref);
    std::string why;
    if (absent.count(id))
      why = "object not here";
    else if (it == found.here.end())
      why = "ref not here";
    else if (it->second != id)
      why = "here at " + it->second;
    if (!why.empty()) found.differences.push_back("missing " + ref + " " + id + " (" + why + ")");
  }
  for (const auto& [ref, id] : found.here)
    if (!state.refs.count(ref)) found.differences.push_back("extra " + ref + " " + id);
  auto branch = ::graspd::git::head_branch(state);
  if (auto here = head_branch_here(path); branch && here != *branch)
    found.differences.push_back("HEAD names refs/heads/" + here + ", the state refs/heads/" +
                                *branch);
}

Comparison compare(GitSession& git, const policy::StoreView& view, const Hosted& repository) {
  Comparison found;
  found.state =
      ::graspd::git::push_authority(view, repository.name.owner, repository.name.identifier, {})
          .state;
  auto listing = git.run(repository.path, {"for-each-ref", "--format=%(objectname) %(refname)",
                                           "refs/heads", "refs/tags"});
  if (!listing || listing->exit_code != 0) {
    found.unreadable = true;
    found.differences.push_back("unreadable (git for-each-ref: " +
                                (listing ? listing->err : std::string("did not run")) + ")");
    return found;
  }
  found.here = parse_ref_listing(listing->out);
  if (!found.state) return found;
  auto absent = git.missing(repository.path, state_object_ids(*found.state));
  if (!absent) {
    found.unreadable = true;
    found.differences.push_back("unreadable (git cat-file failed)");
    return found;
  }
  found.absent_ids = std::move(*absent);
  describe_differences(found, repository.path);
  return found;
}

/// The update-ref transaction that makes `here`'s branches and tags the state's; every update
/// names the value read, so a ref a push or the daemon moved meanwhile fails it whole.
std::string ref_commands(const StateRefs& state, const RefMap& here) {
  std::string commands;
  for (const auto& [ref, id] : state.refs) {
    if (!::graspd::git::is_valid_ref_name(ref) || !::graspd::git::is_object_id(id)) continue;
    auto it = here.find(ref);
    if (it == here.end())
      commands += "update " + ref + " " + id + " " + ::graspd::git::zero_id + "\n";
    else if (it->second != id)
      commands += "update " + ref + " " + id + " " + it->second + "\n";
  }
  for (const auto& [ref, id] : here)
    if (!state.refs.count(ref)) commands += "delete " + ref + " " + id + "\n";
  return commands;
}

/// What --repair needs beyond the repository.
struct RepairSettings {
  bool fetch_enabled = true;
  std::size_t urls_per_other_owner = 2;
  /// Other repositories here with the identifier copied from, at most
  /// (NGIT_GIT_STATE_MAX_SIBLINGS).
  std::size_t max_siblings = 4;
  /// The cluster peers' git bases (NGIT_SYNC_PEERS): fetched from first, as by the daemon.
  std::vector<std::string> peer_git_bases;
  git::GitFetcherOptions fetcher;
  /// Longest time one repository's fetch may take, all clone URLs together.
  std::chrono::seconds deadline{600};
};

/// The daemon's fetch rules (NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES, NGIT_DOMAIN, NGIT_GIT_FETCH_*,
/// NGIT_GIT_MAX_BODY_BYTES, NGIT_SYNC_PEERS tried first and trusted whatever they resolve to), but
/// one round over the clone URLs within `deadline`: a command does not wait out the daemon's
/// backoff between rounds.
RepairSettings repair_settings(const Config& config) {
  RepairSettings out;
  out.fetch_enabled = config.git_fetch_enabled;
  out.urls_per_other_owner = config.git_fetch_urls_per_other_owner;
  out.max_siblings = config.git_state_max_siblings;
  out.peer_git_bases = peer_git_bases(config);
  auto timeout = std::chrono::seconds(std::max<std::uint64_t>(config.git_fetch_timeout_secs, 1));
  // Room for a dead first clone URL and a good second one.
  out.deadline = 2 * timeout;
  auto& fetcher = out.fetcher;
  fetcher.service = config.domain.address;
  fetcher.allow_private_addresses = config.sync_allow_private_addresses;
  fetcher.fetch_timeout = timeout;
  fetcher.max_fetch_bytes = config.git_max_body_bytes;
  fetcher.limits.max_running = config.git_fetch_max_running;
  fetcher.limits.per_host_running = config.git_fetch_max_per_host;
  fetcher.limits.per_host_per_minute = config.git_fetch_per_host_per_minute;
  fetcher.limits.host_skip = std::chrono::seconds(config.git_fetch_host_skip_secs);
  fetcher.limits.backoff_base = fetcher.limits.backoff_cap = out.deadline + std::chrono::seconds(1);
  fetcher.give_up_after = out.deadline;
  for (const auto& base : out.peer_git_bases)
    if (auto url = parse_url(base)) fetcher.trusted_hosts.insert(git::trusted_host_key(*url));
  return out;
}

/// Copies `ids` from other repositories here with the same identifier (§5.9, as the daemon's
/// applier does) until none is missing; returns those still missing.
std::vector<std::string> copy_from_siblings(GitSession& git, const RepairSettings& settings,
                                            const Hosted& repository,
                                            const std::vector<std::string>& siblings,
                                            std::vector<std::string> ids) {
  const auto hooks = "core.hooksPath=" + git.repositories().hooks_dir().string();
  for (std::size_t i = 0; i < siblings.size() && i < settings.max_siblings && !ids.empty(); ++i) {
    std::vector<std::string> args{"-c",           "protocol.allow=never",
                                  "-c",           "protocol.file.allow=always",
                                  "-c",           "uploadpack.allowAnySHA1InWant=true",
                                  "-c",           hooks,
                                  "fetch",        "--quiet",
                                  "--no-tags",    "--no-write-fetch-head",
                                  "--no-auto-gc", "--",
                                  siblings[i]};
    args.insert(args.end(), ids.begin(), ids.end());
    git.run(repository.path, std::move(args), {}, settings.fetcher.max_fetch_bytes);
    auto still = git.missing(repository.path, ids);
    if (still) ids = std::move(*still);
  }
  return ids;
}

/// Fetches the state's absent objects; empty when they are all here now, else why not.
std::string fetch_absent(GitSession& git, const policy::StoreView& view,
                         const RepairSettings& settings, const Hosted& repository,
                         std::vector<std::string> ids) {
  if (!settings.fetch_enabled) return "objects not fetched: git_fetch_enabled is false";
  git::FetchJob job;
  job.key = "check-git " + repository.path;
  job.repository = repository.path;
  job.ids = std::move(ids);
  // Within a cluster the peers have the objects first (as in the daemon: actors/git/git_host.cpp).
  for (const auto& base : settings.peer_git_bases)
    job.urls.push_back(base + "/" + repository.label);
  for (auto& url : ::graspd::git::repository_clone_urls(
           view, repository.name.owner, repository.name.identifier, settings.urls_per_other_owner))
    job.urls.push_back(std::move(url));
  job.author = nostr::to_hex(repository.name.owner);
  job.own_state = true;
  if (job.urls.empty()) return "objects not fetched: the announcements name no clone URL";
  auto result = git.fetch(settings.fetcher, std::move(job), Clock::now() + settings.deadline);
  if (!result)
    return "objects not fetched within " + std::to_string(settings.deadline.count()) + " s";
  if (*result != git::FetchResult::complete) return "objects found at no fetchable clone URL";
  return {};
}

/// Brings one repository in line with its state: absent objects first (copied from `siblings`,
/// other repositories here with the identifier, else fetched; no ref moves before every object is
/// here), then branches and tags in one transaction, then HEAD. The refs and the state
/// are read again after the fetch: for-each-ref leaves out a ref whose object is not here, and a
/// newer state may have come. Empty when done, else why not.
std::string repair(GitSession& git, const policy::StoreView& view, const RepairSettings& settings,
                   const Hosted& repository, const std::vector<std::string>& siblings,
                   const Comparison& found) {
  if (!found.state || found.unreadable) return "nothing to repair from";
  auto absent = copy_from_siblings(git, settings, repository, siblings, found.absent_ids);
  if (!absent.empty())
    if (auto why = fetch_absent(git, view, settings, repository, std::move(absent)); !why.empty())
      return why;
  auto now = compare(git, view, repository);
  if (!now.state || now.unreadable) return "the repository or its state could not be read again";
  if (!now.absent_ids.empty()) return "objects still missing after the fetch";
  if (auto commands = ref_commands(*now.state, now.here); !commands.empty()) {
    auto updated = git.run(repository.path, {"update-ref", "--stdin"}, std::move(commands));
    if (!updated || updated->exit_code != 0)
      return "update-ref failed (a push may have moved a ref meanwhile): " +
             (updated ? updated->err : std::string("did not run"));
  }
  auto branch = ::graspd::git::head_branch(*now.state);
  if (branch && head_branch_here(repository.path) != *branch &&
      !git.repositories().set_head(repository.name, *branch))
    return "HEAD could not be written";
  return {};
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

/// The whole run: every repository in turn, its differences printed as found.
class GitChecker {
 public:
  GitChecker(const Config& config, std::string git_binary, const policy::StoreView& view,
             bool repair, std::ostream& out, std::ostream& err)
      : repositories_(config.git_data_path),
        git_binary_(std::move(git_binary)),
        view_(view),
        repair_(repair),
        settings_(repair_settings(config)),
        out_(out),
        progress_(err, stderr_is_terminal(), "check-git", "repositories") {}

  int run() {
    auto hosted = hosted_repositories(repositories_);
    for (std::size_t i = 0; i < hosted.size(); ++i) {
      check(hosted, hosted[i]);
      progress_.update(i + 1, static_cast<double>(i + 1) / static_cast<double>(hosted.size()));
    }
    progress_.clear();
    summarise(hosted.size());
    std::size_t remaining = repair_ ? still_differ_ : differ_;
    return remaining == 0 ? kNoDifferences : kDifferencesRemain;
  }

 private:
  /// The other repositories here with `repository`'s identifier.
  static std::vector<std::string> siblings_of(const std::vector<Hosted>& hosted,
                                              const Hosted& repository) {
    std::vector<std::string> out;
    for (const auto& other : hosted)
      if (other.name.identifier == repository.name.identifier && other.path != repository.path)
        out.push_back(other.path);
    return out;
  }

  void check(const std::vector<Hosted>& hosted, const Hosted& repository) {
    GitSession git(repositories_, git_binary_);
    auto found = compare(git, view_, repository);
    if (!found.state && !found.unreadable) return note_no_state(repository, found);
    if (found.differences.empty()) return;
    ++differ_;
    for (const auto& line : found.differences) print(repository, line);
    if (!repair_) return;
    auto why = repair(git, view_, settings_, repository, siblings_of(hosted, repository), found);
    auto after = compare(git, view_, repository);  // the state is read again: it may be newer
    if (why.empty() && after.differences.empty()) {
      ++repaired_;
      return print(repository, "repaired");
    }
    ++still_differ_;
    print(repository, "still differs" + (why.empty() ? std::string() : ": " + trimmed(why)));
    for (const auto& line : after.differences) print(repository, line);
  }

  /// No authorising state: a new repository awaiting its first push, not a difference. Refs here
  /// without a state are left alone (nothing authorises deleting them) and only counted.
  void note_no_state(const Hosted& repository, const Comparison& found) {
    ++without_state_;
    if (found.here.empty()) return print(repository, "no state (awaiting a first push)");
    print(repository, "no state (" + std::to_string(found.here.size()) +
                          " branches and tags here, left as they are)");
  }

  void print(const Hosted& repository, const std::string& line) {
    progress_.clear();
    out_ << repository.label << ": " << line << "\n";
  }

  void summarise(std::size_t checked) {
    out_ << "checked " << checked << " repositories: ";
    if (repair_)
      out_ << differ_ << " differed, " << repaired_ << " repaired, " << still_differ_
           << " still differ";
    else
      out_ << differ_ << " differ";
    if (without_state_ > 0) out_ << ", " << without_state_ << " without state";
    out_ << "\n";
    out_.flush();
  }

  git::Repositories repositories_;
  std::string git_binary_;
  const policy::StoreView& view_;
  bool repair_;
  RepairSettings settings_;
  std::ostream& out_;
  ProgressLine progress_;
  std::size_t differ_ = 0;
  std::size_t repaired_ = 0;
  std::size_t still_differ_ = 0;
  std::size_t without_state_ = 0;
};

/// Why the configured paths or the git executable cannot serve the check; empty when they can.
/// Each reason names the option, as the daemon's configuration errors do.
std::string unusable_setup(const Config& config, const std::string& git_binary) {
  if (!fs::exists(fs::path(config.data_path) / "data.mdb"))
    return "relay_data_path \"" + config.data_path + "\": no event store there";
  std::error_code error;
  if (!fs::is_directory(config.git_data_path, error))
    return "git_data_path \"" + config.git_data_path + "\": not a directory";
  if (git_binary.empty()) return "git: no git executable found in PATH";
  return {};
}

}  // namespace

}  // namespace check_git_impl

int run_check_git(const std::vector<std::string>& args, const EnvironmentLookup& environment,
                  std::ostream& out, std::ostream& err) {
  namespace impl = check_git_impl;
  bool repair = false;
  std::vector<std::string> config_args;
  for (const auto& arg : args) {
    if (arg == "--repair")
      repair = true;
    else
      config_args.push_back(arg);
  }
  auto loaded = load_config(config_args, environment);
  if (!loaded) {
    err << "graspd check-git: " << loaded.error().message << "\n";
    return impl::kUsageOrConfigError;
  }
  auto& result = loaded.value();
  if (result.action != Action::run) {
    (result.action == Action::help ? out : err) << impl::kCheckGitUsage;
    return result.action == Action::help ? 0 : impl::kUsageOrConfigError;
  }
  log::set_level(result.config.log_level);
  const auto& config = result.config;
  auto git_binary = git::find_git_binary();
  if (auto why = impl::unusable_setup(config, git_binary); !why.empty()) {
    err << "graspd check-git: " << why << "\n";
    return impl::kUsageOrConfigError;
  }
  try {
    store::StoreOptions options;
    options.path = config.data_path;
    auto store = std::make_shared<const store::EventStore>(options);
    // Held (purgatory) events count, as for the daemon's applier and push authorisation.
    store::StoreAndHeldView view(store);
    return impl::GitChecker(config, git_binary, view, repair, out, err).run();
  } catch (const std::exception& e) {
    err << "graspd check-git: relay_data_path \"" << config.data_path
        << "\": cannot read the event store: " << e.what() << "\n";
    return impl::kUsageOrConfigError;
  }
}

}  // namespace graspd::runtime
