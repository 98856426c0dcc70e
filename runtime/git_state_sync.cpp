#include <utility>  // before Asio, see toolchain.md §1

#include "runtime/git_state_sync.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include "messages/nostr/nip19.hpp"
#include "runtime/git_process.hpp"
#include "runtime/log.hpp"
#include "runtime/relay_client.hpp"

namespace graspd::runtime::git {

namespace net = boost::asio;
namespace fs = std::filesystem;
using ::graspd::git::StateRefs;

namespace {

constexpr std::string_view component = "git";
constexpr std::size_t max_queue = 1024;
constexpr std::size_t max_delayed = 256;
constexpr std::chrono::seconds local_timeout{60};
constexpr std::size_t max_listing = 16 * 1024 * 1024;

std::string lowercase(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool same_service(const ParsedUrl& url, const HostPort& service) {
  if (lowercase(url.host) != lowercase(service.host)) return false;
  auto port = service.port ? *service.port : default_port(url.scheme);
  return url.port == port;
}

}  // namespace

bool is_fetchable_clone_url(std::string_view url, const HostPort& service) {
  if (url.empty() || url.size() > 2048) return false;
  for (unsigned char c : url)
    if (c <= 0x20 || c == 0x7f) return false;
  auto parsed = parse_url(url);
  if (!parsed || parsed->has_user_info || parsed->host.empty()) return false;
  if (parsed->scheme != "http" && parsed->scheme != "https") return false;
  return !same_service(*parsed, service);
}

struct GitStateSync::Impl : std::enable_shared_from_this<GitStateSync::Impl> {
  Impl(net::io_context& io, Repositories r, GitStateSyncOptions o, GitStateSyncHooks h)
      : strand(net::make_strand(io)),
        resolver(strand),
        repositories(std::move(r)),
        options(std::move(o)),
        hooks(std::move(h)) {}

  /// One repository to bring in line with one state.
  struct Task {
    RepositoryName name;
    std::string path;
    StateRefs refs;
    bool fetch_phase = false;
    std::vector<std::string> urls;
    std::size_t next_url = 0;
    /// Other repositories here with the same identifier: objects are copied from them first.
    std::vector<std::string> siblings;
    /// A want_commit job: `refs` holds the one commit; nothing is applied, presence is reported.
    bool commit_job = false;
    /// Fetched from before the announcements' clone URLs (the PR's `clone` tags).
    std::vector<std::string> extra_urls;
  };

  // ---------------------------------------------------------------- queue

  void enqueue(std::string identifier) {
    if (stopping || queued.count(identifier)) return;
    if (queue.size() >= max_queue) {
      bump(counters.dropped, "dropped");
      return;
    }
    queued.insert(identifier);
    queue.push_back(std::move(identifier));
    if (!busy) next_state();
  }

  void next_state() {
    busy = false;
    if (stopping) return;
    if (!ready.empty()) {
      busy = true;
      auto task = std::move(ready.front());
      ready.pop_front();
      return check(std::move(task));
    }
    if (queue.empty()) return;
    busy = true;
    auto identifier = std::move(queue.front());
    queue.pop_front();
    queued.erase(identifier);
    for (auto& task : tasks_for(identifier)) ready.push_back(std::move(task));
    busy = false;
    next_state();
  }

  /// Every repository here named `identifier` that has an authorising state (its owner's newest).
  std::vector<Task> tasks_for(const std::string& identifier) {
    std::vector<Task> out;
    if (!is_valid_identifier(identifier) || !hooks.newest_state) return out;
    std::vector<std::string> paths;
    // Only announcement authors can have a repository of that name here (no directory scan).
    auto owners = hooks.owners ? hooks.owners(identifier) : std::vector<nostr::Pubkey>{};
    for (const auto& owner : owners) {
      RepositoryName name{owner, identifier};
      if (!repositories.exists(name)) continue;
      paths.push_back(repositories.path_of(name).string());
      auto newest = hooks.newest_state(owner, identifier);
      if (!newest) continue;
      Task task;
      task.name = name;
      task.path = paths.back();
      task.refs = std::move(*newest);
      out.push_back(std::move(task));
    }
    for (auto& task : out)
      for (const auto& path : paths)
        if (path != task.path) task.siblings.push_back(path);
    return out;
  }

  // ---------------------------------------------------------------- git commands

  std::vector<std::string> git(const Task& task, std::vector<std::string> args) const {
    std::vector<std::string> argv{options.git_binary, "--git-dir=" + task.path};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  std::vector<std::string> environment() const { return repositories.git_environment(); }

  void run(std::vector<std::string> argv, std::string input, std::chrono::seconds timeout,
           std::uint64_t max_file_bytes, std::function<void(Collected)> done) {
    run_collect(strand, std::move(argv), environment(), repositories.root().string(),
                std::move(input), timeout, max_listing, max_file_bytes,
                [self = shared_from_this(), done = std::move(done)](Collected result) {
                  if (self->stopping) return;
                  done(std::move(result));
                });
  }

  // ---------------------------------------------------------------- steps

  /// Which of the state's objects are missing here.
  void check(Task task) {
    std::set<std::string> ids;
    for (const auto& [ref, id] : task.refs.refs)
      if (::graspd::git::is_object_id(id)) ids.insert(id);
    std::string input;
    for (const auto& id : ids) input += id + "\n";
    auto shared = std::make_shared<Task>(std::move(task));
    run(git(*shared, {"cat-file", "--batch-check"}), std::move(input), local_timeout, 0,
        [self = shared_from_this(), shared](Collected result) {
          if (result.exit_code != 0) {
            log::warn(component, "cat-file failed in ", shared->path, ": ", result.err);
            return self->next_state();
          }
          bool missing = result.out.find(" missing") != std::string::npos;
          if (!missing && shared->commit_job) {
            if (self->hooks.commit_present)
              self->hooks.commit_present(shared->name, shared->refs.event_id);
            return self->next_state();
          }
          if (!missing) {
            self->report_present(*shared);
            return self->apply(std::move(*shared));
          }
          if (!shared->siblings.empty()) return self->copy_from_sibling(std::move(*shared));
          if (!shared->fetch_phase) return self->schedule_fetch(std::move(*shared));
          self->fetch_next(std::move(*shared));
        });
  }

  void report_present(const Task& task) const {
    nostr::EventId id;
    if (hooks.objects_present && nostr::from_hex(task.refs.event_id, id))
      hooks.objects_present(task.name, id);
  }

  /// Copies the state's objects from another repository here with the same identifier (§5.9),
  /// then checks again.
  void copy_from_sibling(Task task) {
    auto source = std::move(task.siblings.back());
    task.siblings.pop_back();
    std::set<std::string> ids;
    for (const auto& [ref, id] : task.refs.refs)
      if (::graspd::git::is_object_id(id)) ids.insert(id);
    std::vector<std::string> args{
        "-c",           "protocol.allow=never",
        "-c",           "protocol.file.allow=always",
        "-c",           "uploadpack.allowAnySHA1InWant=true",
        "-c",           "core.hooksPath=" + repositories.hooks_dir().string(),
        "fetch",        "--quiet",
        "--no-tags",    "--no-write-fetch-head",
        "--no-auto-gc", "--",
        source};
    args.insert(args.end(), ids.begin(), ids.end());
    auto shared = std::make_shared<Task>(std::move(task));
    run(git(*shared, std::move(args)), "", local_timeout, options.max_fetch_bytes,
        [self = shared_from_this(), shared](Collected) { self->check(std::move(*shared)); });
  }

  void schedule_fetch(Task task) {
    if (!options.fetch_enabled || delayed >= max_delayed) return next_state();
    ++delayed;
    task.fetch_phase = true;
    auto timer = std::make_shared<net::steady_timer>(strand);
    timer->expires_after(options.fetch_delay);
    auto shared = std::make_shared<Task>(std::move(task));
    timer->async_wait(
        [self = shared_from_this(), timer, shared](const boost::system::error_code& e) {
          --self->delayed;
          if (e || self->stopping) return;
          if (!shared->commit_job && !self->still_newest(*shared)) return;
          auto identifier = shared->name.identifier;
          shared->urls = std::move(shared->extra_urls);
          if (self->hooks.clone_urls)
            for (auto& url : self->hooks.clone_urls(identifier)) shared->urls.push_back(url);
          self->ready.push_back(std::move(*shared));
          if (!self->busy) self->next_state();
        });
    next_state();
  }

  /// Tries the next clone URL: checked, resolved, its addresses checked, then fetched by id.
  void fetch_next(Task task) {
    while (task.next_url < task.urls.size() &&
           !is_fetchable_clone_url(task.urls[task.next_url], options.service))
      ++task.next_url;
    if (task.next_url >= task.urls.size()) {
      bump(counters.fetch_failed, "unavailable");
      log::info(component, "objects of state ", task.refs.event_id.substr(0, 12), " for ",
                task.path, " were found at no clone URL");
      return next_state();
    }
    auto url = *parse_url(task.urls[task.next_url]);
    auto shared = std::make_shared<Task>(std::move(task));
    std::string host = url.host;
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    resolver.async_resolve(
        host, std::to_string(url.port),
        [self = shared_from_this(), shared, url, host](
            const boost::system::error_code& error, net::ip::tcp::resolver::results_type results) {
          if (self->stopping) return;
          std::string address;
          if (!error) {
            for (const auto& entry : results) {
              auto text = entry.endpoint().address().to_string();
              if (self->options.allow_private_addresses || is_public_address(text)) {
                address = entry.endpoint().address().is_v6() ? "[" + text + "]" : text;
                break;
              }
            }
          }
          if (address.empty()) {
            ++shared->next_url;
            return self->fetch_next(std::move(*shared));
          }
          self->fetch_from(std::move(*shared), url, host, address);
        });
  }

  void fetch_from(Task task, const ParsedUrl& url, const std::string& host,
                  const std::string& address) {
    std::set<std::string> ids;
    for (const auto& [ref, id] : task.refs.refs)
      if (::graspd::git::is_object_id(id)) ids.insert(id);
    const auto& source = task.urls[task.next_url];
    std::vector<std::string> args{
        "-c", "protocol.allow=never", "-c", "protocol.https.allow=always", "-c",
        "protocol.http.allow=always", "-c", "http.followRedirects=false", "-c",
        // The address checked above is the one connected to (no second resolution).
        "http.curloptResolve=" + host + ":" + std::to_string(url.port) + ":" + address, "-c",
        "credential.helper=", "-c", "http.lowSpeedLimit=1024", "-c", "http.lowSpeedTime=60", "-c",
        "fetch.fsckObjects=true", "-c", "core.hooksPath=" + repositories.hooks_dir().string(),
        "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc", "--", source};
    args.insert(args.end(), ids.begin(), ids.end());
    auto shared = std::make_shared<Task>(std::move(task));
    run(git(*shared, std::move(args)), "", options.fetch_timeout, options.max_fetch_bytes,
        [self = shared_from_this(), shared](Collected result) {
          if (result.exit_code != 0) {
            log::info(component, "fetch for ", shared->path, " from ",
                      shared->urls[shared->next_url], " failed (", result.exit_code,
                      "): ", result.err);
            ++shared->next_url;
            return self->fetch_next(std::move(*shared));
          }
          self->bump(self->counters.fetched, "fetched");
          // Check again: every object must be here before a ref moves.
          ++shared->next_url;
          self->check(std::move(*shared));
        });
  }

  /// Sets branches and tags to the state's (one update-ref transaction) and HEAD, under the push
  /// lock.
  /// False when a newer state replaced the task's while it waited (that one has its own task).
  bool still_newest(const Task& task) const {
    auto newest = hooks.newest_state(task.name.owner, task.name.identifier);
    return newest && newest->event_id == task.refs.event_id;
  }

  /// Sets branches and tags to the state's (one update-ref transaction, each update checked against
  /// the value read) and HEAD. The push lock is taken only when a ref has to move, so a push right
  /// after another one is not turned away because the state already matches.
  void apply(Task task) {
    if (!still_newest(task)) return next_state();
    auto shared = std::make_shared<Task>(std::move(task));
    run(git(*shared,
            {"for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/tags"}),
        "", local_timeout, 0, [self = shared_from_this(), shared](Collected result) {
          if (result.exit_code != 0) return self->next_state();
          ::graspd::git::RefMap current;
          std::string_view text = result.out;
          while (!text.empty()) {
            auto eol = text.find('\n');
            auto line = text.substr(0, eol);
            if (auto space = line.find(' '); space != std::string_view::npos)
              current.emplace(std::string(line.substr(space + 1)),
                              std::string(line.substr(0, space)));
            if (eol == std::string_view::npos) break;
            text.remove_prefix(eol + 1);
          }
          std::string commands;
          for (const auto& [ref, id] : shared->refs.refs) {
            if (!::graspd::git::is_valid_ref_name(ref)) continue;
            auto it = current.find(ref);
            if (it == current.end())
              commands += "update " + ref + " " + id + " " + ::graspd::git::zero_id + "\n";
            else if (it->second != id)
              commands += "update " + ref + " " + id + " " + it->second + "\n";
          }
          for (const auto& [ref, id] : current)
            if (!shared->refs.refs.count(ref)) commands += "delete " + ref + " " + id + "\n";
          if (commands.empty()) {
            self->align_head(*shared);
            return self->next_state();
          }
          // A push holding the lock brings the refs in line itself.
          if (self->hooks.try_lock && !self->hooks.try_lock(shared->path))
            return self->next_state();
          self->run(self->git(*shared, {"update-ref", "--stdin"}), commands, local_timeout, 0,
                    [self, shared](Collected updated) {
                      if (updated.exit_code != 0) {
                        log::warn(component, "update-ref failed in ", shared->path, ": ",
                                  updated.err);
                      } else {
                        self->bump(self->counters.applied, "applied");
                        self->align_head(*shared);
                      }
                      if (self->hooks.unlock) self->hooks.unlock(shared->path);
                      self->next_state();
                    });
        });
  }

  /// Points HEAD at the state's branch when it points elsewhere.
  void align_head(const Task& task) {
    auto branch = ::graspd::git::head_branch(task.refs);
    if (!branch) return;
    std::ifstream file(fs::path(task.path) / "HEAD");
    std::string head((std::istreambuf_iterator<char>(file)), {});
    if (head != "ref: refs/heads/" + *branch + "\n") repositories.set_head(task.name, *branch);
  }

  net::strand<net::io_context::executor_type> strand;
  net::ip::tcp::resolver resolver;
  Repositories repositories;
  GitStateSyncOptions options;
  GitStateSyncHooks hooks;
  GitStateSyncCounters counters;
  /// graspd_git_states_total{result}: the Prometheus twins of counters.
  prometheus::Family<prometheus::Counter>* family = nullptr;

  void bump(std::atomic<std::uint64_t>& counter, const char* result) {
    ++counter;
    if (family) family->Add({{"result", result}}).Increment();
  }

  std::deque<std::string> queue;  ///< identifiers to look at
  std::set<std::string> queued;
  std::deque<Task> ready;
  std::size_t delayed = 0;
  bool busy = false;
  bool stopping = false;
};

GitStateSync::GitStateSync(net::io_context& io, Repositories repositories,
                           GitStateSyncOptions options, GitStateSyncHooks hooks,
                           prometheus::Registry* registry)
    : impl_(std::make_shared<Impl>(io, std::move(repositories), std::move(options),
                                   std::move(hooks))) {
  if (!registry) return;
  impl_->family = &prometheus::BuildCounter()
                       .Name("graspd_git_states_total")
                       .Help(
                           "Stored state events applied to repositories here: applied (refs "
                           "set), fetched (missing objects fetched from another clone URL), "
                           "unavailable (no clone URL had them), dropped (queue full)")
                       .Register(*registry);
  for (auto result : {"applied", "fetched", "unavailable", "dropped"})
    impl_->family->Add({{"result", result}});
}

GitStateSync::~GitStateSync() {
  stop();
}

void GitStateSync::on_state(nostr::EventPtr state) {
  if (!state || impl_->options.git_binary.empty()) return;
  net::post(impl_->strand, [impl = impl_, identifier = std::string(state->d_tag())]() mutable {
    impl->enqueue(std::move(identifier));
  });
}

void GitStateSync::on_pushed(const RepositoryName& name) {
  if (impl_->options.git_binary.empty()) return;
  net::post(impl_->strand,
            [impl = impl_, identifier = name.identifier]() mutable { impl->enqueue(identifier); });
}

void GitStateSync::want_commit(const RepositoryName& name, std::string commit,
                               std::vector<std::string> extra_urls) {
  if (impl_->options.git_binary.empty() || !::graspd::git::is_object_id(commit)) return;
  net::post(impl_->strand, [impl = impl_, name, commit = std::move(commit),
                            urls = std::move(extra_urls)]() mutable {
    if (impl->stopping || !impl->repositories.exists(name)) return;
    Impl::Task task;
    task.name = name;
    task.path = impl->repositories.path_of(name).string();
    task.refs.event_id = commit;
    task.refs.refs.emplace("commit", std::move(commit));
    task.commit_job = true;
    task.extra_urls = std::move(urls);
    impl->ready.push_back(std::move(task));
    if (!impl->busy) impl->next_state();
  });
}

void GitStateSync::stop() {
  net::post(impl_->strand, [impl = impl_] {
    impl->stopping = true;
    impl->queue.clear();
    impl->ready.clear();
    impl->resolver.cancel();
  });
}

const GitStateSyncCounters& GitStateSync::counters() const {
  return impl_->counters;
}

}  // namespace graspd::runtime::git
