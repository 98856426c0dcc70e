#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/git/git_ref_probe.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <optional>
#include <string_view>

#include "runtime/git/engine/git_fetch_schedule.hpp"
#include "store/git/git_push.hpp"

namespace graspd::runtime::git {

namespace net = boost::asio;

namespace {

constexpr std::size_t probe_reason_bytes = 160;

RefProbeResult probe_failure(std::string reason) {
  RefProbeResult result;
  result.reason = std::move(reason);
  return result;
}

/// A branch or tag by a valid name (not a peeled `^{}` entry, not HEAD or another namespace).
bool is_probed_ref(std::string_view name) {
  return (name.starts_with("refs/heads/") || name.starts_with("refs/tags/")) &&
         ::graspd::git::is_valid_ref_name(name);
}

/// The branches and tags of "<id>\t<refname>" lines (ls-remote, for-each-ref); nullopt beyond
/// `max_refs`. Lines that are neither are skipped: what a server says is not trusted.
std::optional<std::map<std::string, std::string>> probe_ref_lines(std::string_view text,
                                                                  std::size_t max_refs) {
  std::map<std::string, std::string> refs;
  while (!text.empty()) {
    auto line = text.substr(0, text.find('\n'));
    text.remove_prefix(std::min(text.size(), line.size() + 1));
    auto tab = line.find('\t');
    if (tab == std::string_view::npos) continue;
    auto id = line.substr(0, tab), name = line.substr(tab + 1);
    if (!::graspd::git::is_object_id(id) || !is_probed_ref(name)) continue;
    refs[std::string(name)] = std::string(id);
    if (refs.size() > max_refs) return std::nullopt;
  }
  return refs;
}

/// git's first stderr line for a reason shown to users: control characters replaced, at most
/// probe_reason_bytes (cut between UTF-8 characters); the exit code when git said nothing.
std::string probe_error_line(std::string_view err, int exit_code) {
  while (!err.empty()) {
    auto line = err.substr(0, err.find('\n'));
    err.remove_prefix(std::min(err.size(), line.size() + 1));
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty()) continue;
    if (line.size() > probe_reason_bytes) {
      auto cut = probe_reason_bytes;
      while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
      line = line.substr(0, cut);
    }
    std::string out(line);
    for (auto& c : out)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    return out;
  }
  return "exit code " + std::to_string(exit_code);
}

/// What git's stderr says of a URL that reached a server but no repository: a 404 (`repository
/// '…' not found`) or an answer that is no ref advertisement.
bool probe_not_a_repository(std::string_view err) {
  return (err.find("repository '") != std::string_view::npos &&
          err.find("' not found") != std::string_view::npos) ||
         err.find("is this a git repository?") != std::string_view::npos ||
         err.find("does not appear to be a git repository") != std::string_view::npos;
}

/// Why a remote listing failed, from git's stderr (LC_ALL=C). A 404 first: its message quotes the
/// URL, whose path could hold a word the unreachable markers look for.
RefProbeResult probe_remote_failure(const Collected& collected) {
  if (probe_not_a_repository(collected.err)) return probe_failure("not a git repository");
  if (is_unreachable_error(collected.err)) return probe_failure("unreachable");
  return probe_failure("git failed: " + probe_error_line(collected.err, collected.exit_code));
}

/// Why listing a repository here failed: mostly that it is not there (yet).
RefProbeResult probe_local_failure(const Collected& collected) {
  if (collected.err.find("not a git repository") != std::string::npos)
    return probe_failure("no git data here yet");
  return probe_failure("git failed: " + probe_error_line(collected.err, collected.exit_code));
}

}  // namespace

RefProbe::RefProbe(GitRunner runner, RefProbeOptions options)
    : runner_(std::move(runner)), options_(std::move(options)), resolver_(runner_.executor) {}

void RefProbe::probe(const std::string& url, std::function<void(RefProbeResult)> done) {
  if (stopping_) return;
  // Judged before it waits: a refused URL costs no slot.
  if (auto verdict = judge_clone_url(url, options_.service); verdict != CloneUrlVerdict::fetchable)
    return report(std::move(done), probe_failure("refused: " + std::string(verdict_name(verdict))));
  admit({url, false, std::move(done)});
}

void RefProbe::local_refs(const std::string& repository_path,
                          std::function<void(RefProbeResult)> done) {
  if (stopping_) return;
  admit({repository_path, true, std::move(done)});
}

void RefProbe::stop() {
  stopping_ = true;
  queue_.clear();
  resolver_.cancel();
}

void RefProbe::admit(Job job) {
  if (running_ >= options_.max_running && queue_.size() >= options_.max_queued)
    return report(std::move(job.done), probe_failure("busy, try later"));
  queue_.push_back(std::move(job));
  pump();
}

void RefProbe::pump() {
  while (!stopping_ && running_ < options_.max_running && !queue_.empty()) {
    auto job = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    if (job.local)
      list_local(std::move(job));
    else
      resolve(std::move(job));
  }
}

/// Resolves the URL's host; the address checked is the one git connects to (git_remote.hpp).
void RefProbe::resolve(Job job) {
  auto url = *parse_url(job.target);  // judge_clone_url parsed it
  bool any_address =
      any_address_allowed(url, options_.allow_private_addresses, options_.trusted_hosts);
  resolve_remote(resolver_, url, any_address,
                 [self = shared_from_this(),
                  job = std::move(job)](Result<PinnedRemote, RemoteUnresolved> pinned) mutable {
                   if (self->stopping_) return;
                   if (pinned) return self->list_remote(std::move(job), *pinned);
                   bool unresolved = pinned.error() == RemoteUnresolved::cannot_resolve;
                   self->finish(std::move(job),
                                probe_failure(unresolved ? "unreachable" : "no public address"));
                 });
}

/// `ls-remote` over protocol v0: the server's ref advertisement (one GET of info/refs) is all it
/// reads. Protocol v2 would POST an `ls-refs` command to upload-pack after it.
void RefProbe::list_remote(Job job, const PinnedRemote& remote) {
  auto args = remote_options(remote);
  args.insert(args.end(), {"-c", "protocol.version=0", "ls-remote", "--refs", "--", job.target});
  runner_.run_outside(
      std::move(args), options_.timeout, options_.max_advertisement_bytes,
      options_.max_memory_bytes,
      [self = shared_from_this(), job = std::move(job)](Collected collected) mutable {
        if (self->stopping_) return;
        auto result = self->listed(collected);
        self->finish(std::move(job), result ? std::move(*result) : probe_remote_failure(collected));
      });
}

void RefProbe::list_local(Job job) {
  auto args = runner_.argv(
      job.target, {"for-each-ref", "--format=%(objectname)%09%(refname)",
                   "--count=" + std::to_string(options_.max_refs + 1), "refs/heads", "refs/tags"});
  runner_.run(std::move(args), "", options_.timeout, 0,
              [self = shared_from_this(), job = std::move(job)](Collected collected) mutable {
                if (self->stopping_) return;
                auto result = self->listed(collected);
                self->finish(std::move(job),
                             result ? std::move(*result) : probe_local_failure(collected));
              });
}

/// The result of a listing, unless git failed on its own account (nullopt: its stderr says why).
std::optional<RefProbeResult> RefProbe::listed(const Collected& collected) const {
  if (collected.timed_out) return probe_failure("timeout");
  // run_collect kills git once its output passes the limit.
  if (collected.out.size() > options_.max_advertisement_bytes)
    return probe_failure("advertisement too large");
  if (collected.exit_code != 0) return std::nullopt;
  auto refs = probe_ref_lines(collected.out, options_.max_refs);
  if (!refs) return probe_failure("too many refs");
  RefProbeResult result;
  result.ok = true;
  result.refs = std::move(*refs);
  return result;
}

void RefProbe::finish(Job job, RefProbeResult result) {
  --running_;
  report(std::move(job.done), std::move(result));
  pump();
}

/// Posted: `done` may probe again, which must not re-enter pump().
void RefProbe::report(std::function<void(RefProbeResult)> done, RefProbeResult result) const {
  if (!done) return;
  net::post(runner_.executor, [done = std::move(done), result = std::move(result)]() mutable {
    done(std::move(result));
  });
}

}  // namespace graspd::runtime::git
