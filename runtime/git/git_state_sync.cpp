#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/git/git_state_sync.hpp"

#include <boost/asio/io_context.hpp>
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
#include "runtime/git/git_fetcher.hpp"
#include "runtime/ops/log.hpp"

namespace graspd::runtime::git {

namespace net = boost::asio;
namespace fs = std::filesystem;
using ::graspd::git::StateRefs;

namespace {

constexpr std::size_t state_sync_queue_limit = 1024;
constexpr std::chrono::seconds state_sync_local_timeout{60};
/// How soon a state whose repository a push holds is looked at again.
constexpr std::chrono::milliseconds lock_retry_delay{250};

}  // namespace

struct GitStateSync::Impl : std::enable_shared_from_this<GitStateSync::Impl> {
  Impl(net::io_context& io, Repositories r, GitStateSyncOptions o, GitStateSyncHooks h,
       prometheus::Registry* registry)
      : strand(net::make_strand(io)),
        runner{strand, std::move(r), o.git_binary},
        options(std::move(o)),
        hooks(std::move(h)),
        fetcher(std::make_shared<GitFetcher>(runner, fetcher_options(options), registry)) {}

  static GitFetcherOptions fetcher_options(const GitStateSyncOptions& o) {
    return {o.service,      o.allow_private_addresses, o.fetch_timeout, o.max_fetch_bytes, o.limits,
            o.give_up_after};
  }

  /// One repository to bring in line with one state.
  struct Task {
    RepositoryRef name;
    std::string path;
    StateRefs refs;
    /// Other repositories here with the same identifier: objects are copied from them first.
    std::vector<std::string> siblings;
    /// A want_commit job: `refs` holds the one commit; nothing is applied, presence is reported.
    bool commit_job = false;
    /// Fetched from before the announcements' clone URLs (the PR's `clone` tags).
    std::vector<std::string> extra_urls;
    /// The state came by sync: its fetch starts without the delay.
    bool fetch_at_once = false;
  };

  // ---------------------------------------------------------------- queue

  void enqueue(std::string identifier) {
    if (stopping) return fetch_at_once.clear();
    if (queued.count(identifier)) return;
    if (queue.size() >= state_sync_queue_limit) {
      fetch_at_once.erase(identifier);
      bump(counters.dropped, "dropped");
      return;
    }
    queued.insert(identifier);
    queue.push_back(std::move(identifier));
    if (!busy) next_state();
  }

  /// Local steps (cat-file, copies between repositories here, applying refs) run one at a time;
  /// fetches from other hosts run beside them in the fetcher.
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
    auto identifier = std::move(queue.front());
    queue.pop_front();
    queued.erase(identifier);
    bool at_once = fetch_at_once.erase(identifier) > 0;
    for (auto& task : tasks_for(identifier)) {
      task.fetch_at_once = at_once;
      ready.push_back(std::move(task));
    }
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
      RepositoryRef name{owner, identifier};
      if (!runner.repositories.exists(name)) continue;
      paths.push_back(runner.repositories.path_of(name).string());
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

  void run(std::vector<std::string> argv, std::string input, std::chrono::seconds timeout,
           std::uint64_t max_file_bytes, std::function<void(Collected)> done) {
    runner.run(std::move(argv), std::move(input), timeout, max_file_bytes,
               [self = shared_from_this(), done = std::move(done)](Collected result) {
                 if (self->stopping) return;
                 done(std::move(result));
               });
  }

  static std::vector<std::string> state_ids(const Task& task) {
    std::set<std::string> ids;
    for (const auto& [ref, id] : task.refs.refs)
      if (::graspd::git::is_object_id(id)) ids.insert(id);
    return {ids.begin(), ids.end()};
  }

  // ---------------------------------------------------------------- steps

  /// Which of the state's objects are missing here.
  void check(Task task) {
    auto shared = std::make_shared<Task>(std::move(task));
    runner.missing(shared->path, state_ids(*shared),
                   [self = shared_from_this(), shared](auto missing) {
                     if (self->stopping) return;
                     if (!missing) return self->next_state();
                     if (missing->empty() && shared->commit_job) {
                       if (self->hooks.commit_present)
                         self->hooks.commit_present(shared->name, shared->refs.event_id);
                       return self->next_state();
                     }
                     if (missing->empty()) {
                       self->report_present(*shared);
                       return self->apply(std::move(*shared));
                     }
                     if (!shared->siblings.empty())
                       return self->copy_from_sibling(std::move(*shared));
                     if (!shared->commit_job) self->report_missing(*shared);
                     self->request_fetch(std::move(*shared), std::move(*missing));
                   });
  }

  void report_present(const Task& task) const {
    nostr::EventId id;
    if (hooks.objects_present && nostr::from_hex(task.refs.event_id, id))
      hooks.objects_present(task.name, id);
  }

  void report_missing(const Task& task) const {
    nostr::EventId id;
    if (hooks.objects_missing && nostr::from_hex(task.refs.event_id, id))
      hooks.objects_missing(task.name, id);
  }

  /// Copies the state's objects from another repository here with the same identifier (§5.9),
  /// then checks again.
  void copy_from_sibling(Task task) {
    auto source = std::move(task.siblings.back());
    task.siblings.pop_back();
    std::vector<std::string> args{
        "-c",           "protocol.allow=never",
        "-c",           "protocol.file.allow=always",
        "-c",           "uploadpack.allowAnySHA1InWant=true",
        "-c",           "core.hooksPath=" + runner.repositories.hooks_dir().string(),
        "fetch",        "--quiet",
        "--no-tags",    "--no-write-fetch-head",
        "--no-auto-gc", "--",
        source};
    for (auto& id : state_ids(task)) args.push_back(std::move(id));
    auto shared = std::make_shared<Task>(std::move(task));
    run(runner.argv(shared->path, std::move(args)), "", state_sync_local_timeout,
        options.max_fetch_bytes,
        [self = shared_from_this(), shared](Collected) { self->check(std::move(*shared)); });
  }

  /// Hands the missing ids to the fetcher (one request per repository: a newer state replaces the
  /// older one's request and its backoff). When they are all here the task is checked again and
  /// applied.
  void request_fetch(Task task, std::vector<std::string> missing) {
    if (!options.fetch_enabled) return next_state();
    auto shared = std::make_shared<Task>(std::move(task));
    FetchJob job;
    // A pull request's commit is a request of its own; a state's replaces the older state's.
    job.key = shared->commit_job ? "pr " + shared->path + " " + shared->refs.event_id
                                 : "state " + shared->path;
    job.repository = shared->path;
    job.ids = std::move(missing);
    job.urls = shared->extra_urls;  // a PR's own `clone` tags go first
    if (hooks.clone_urls)
      for (auto& url : hooks.clone_urls(shared->name.identifier)) job.urls.push_back(url);
    job.delay = shared->fetch_at_once ? std::chrono::seconds{0} : options.fetch_delay;
    std::weak_ptr<Impl> weak = shared_from_this();
    job.still_wanted = [weak, shared] {
      auto self = weak.lock();
      return self && (shared->commit_job || self->still_newest(*shared));
    };
    job.done = [weak, shared](FetchResult result) {
      if (auto self = weak.lock(); self && !self->stopping) self->fetch_done(*shared, result);
    };
    fetcher->request(std::move(job));
    next_state();
  }

  void fetch_done(const Task& task, FetchResult result) {
    if (result == FetchResult::dropped) return bump(counters.dropped, "dropped");
    if (result == FetchResult::abandoned) {
      bump(counters.fetch_failed, "unavailable");
      log::info(log::components::git, "objects of state ", task.refs.event_id.substr(0, 12),
                " for ", task.path, " were found at no clone URL");
      return;
    }
    bump(counters.fetched, "fetched");
    // Check again: every object must be here before a ref moves.
    ready.push_back(task);
    if (!busy) next_state();
  }

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
    run(runner.argv(shared->path, {"for-each-ref", "--format=%(objectname) %(refname)",
                                   "refs/heads", "refs/tags"}),
        "", state_sync_local_timeout, 0, [self = shared_from_this(), shared](Collected result) {
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
          // A push holds the lock: look again once it may be over. The push may fail or touch
          // only refs/nostr refs, so it cannot be trusted to bring the refs in line.
          if (self->hooks.try_lock && !self->hooks.try_lock(shared->path)) {
            self->retry_later(shared->name.identifier);
            return self->next_state();
          }
          self->run(self->runner.argv(shared->path, {"update-ref", "--stdin"}), commands,
                    state_sync_local_timeout, 0, [self, shared](Collected updated) {
                      if (updated.exit_code != 0) {
                        log::warn(log::components::git, "update-ref failed in ", shared->path, ": ",
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

  /// Looks at `identifier` again after lock_retry_delay (the queue keeps one entry per identifier,
  /// and a newer state replaces the older one's task then).
  void retry_later(std::string identifier) {
    auto timer = std::make_shared<net::steady_timer>(strand);
    timer->expires_after(lock_retry_delay);
    timer->async_wait([self = shared_from_this(), timer, identifier](boost::system::error_code e) {
      if (!e && !self->stopping) self->enqueue(identifier);
    });
  }

  /// Points HEAD at the state's branch when it points elsewhere.
  void align_head(const Task& task) {
    auto branch = ::graspd::git::head_branch(task.refs);
    if (!branch) return;
    std::ifstream file(fs::path(task.path) / "HEAD");
    std::string head((std::istreambuf_iterator<char>(file)), {});
    if (head != "ref: refs/heads/" + *branch + "\n")
      runner.repositories.set_head(task.name, *branch);
  }

  net::strand<net::io_context::executor_type> strand;
  GitRunner runner;
  GitStateSyncOptions options;
  GitStateSyncHooks hooks;
  std::shared_ptr<GitFetcher> fetcher;
  GitStateSyncCounters counters;
  /// graspd_git_states_total{result}: the Prometheus twins of counters.
  prometheus::Family<prometheus::Counter>* family = nullptr;

  void bump(std::atomic<std::uint64_t>& counter, const char* result) {
    ++counter;
    if (family) family->Add({{"result", result}}).Increment();
  }

  std::deque<std::string> queue;  ///< identifiers to look at
  std::set<std::string> queued;
  /// Queued identifiers whose state came by sync: their tasks fetch without the delay (an entry
  /// leaves with its identifier from the queue).
  std::set<std::string> fetch_at_once;
  std::deque<Task> ready;
  bool busy = false;
  bool stopping = false;
};

GitStateSync::GitStateSync(net::io_context& io, Repositories repositories,
                           GitStateSyncOptions options, GitStateSyncHooks hooks,
                           prometheus::Registry* registry)
    : impl_(std::make_shared<Impl>(io, std::move(repositories), std::move(options),
                                   std::move(hooks), registry)) {
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

void GitStateSync::on_state(nostr::EventPtr state, bool by_sync) {
  if (!state || impl_->options.git_binary.empty()) return;
  net::post(impl_->strand,
            [impl = impl_, identifier = std::string(state->d_tag()), by_sync]() mutable {
              if (by_sync) impl->fetch_at_once.insert(identifier);
              impl->enqueue(std::move(identifier));
            });
}

void GitStateSync::on_pushed(const RepositoryRef& name) {
  if (impl_->options.git_binary.empty()) return;
  net::post(impl_->strand,
            [impl = impl_, identifier = name.identifier]() mutable { impl->enqueue(identifier); });
}

void GitStateSync::want_commit(const RepositoryRef& name, std::string commit,
                               std::vector<std::string> extra_urls) {
  if (impl_->options.git_binary.empty() || !::graspd::git::is_object_id(commit)) return;
  net::post(impl_->strand, [impl = impl_, name, commit = std::move(commit),
                            urls = std::move(extra_urls)]() mutable {
    if (impl->stopping || !impl->runner.repositories.exists(name)) return;
    Impl::Task task;
    task.name = name;
    task.path = impl->runner.repositories.path_of(name).string();
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
    impl->fetcher->stop();
  });
}

const GitStateSyncCounters& GitStateSync::counters() const {
  return impl_->counters;
}

}  // namespace graspd::runtime::git
