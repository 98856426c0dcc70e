#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/git/git_state_sync.hpp"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
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

/// Identifiers with work waiting, at most; beyond, a new identifier's look is dropped.
constexpr std::size_t state_sync_queue_limit = 1024;
/// Tasks waiting in all lanes, at most (a lane keeps one per repository, plus wanted commits).
constexpr std::size_t state_sync_task_limit = 16384;
constexpr std::chrono::seconds state_sync_local_timeout{60};
/// How soon a task whose repository a push holds is looked at again.
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
    GitFetcherOptions out{o.service,
                          o.allow_private_addresses,
                          o.fetch_timeout,
                          o.max_fetch_bytes,
                          o.limits,
                          o.give_up_after,
                          /*trusted_hosts=*/{}};
    for (const auto& base : o.peer_git_bases)
      if (auto url = parse_url(base)) out.trusted_hosts.insert(trusted_host_key(*url));
    return out;
  }

  /// One repository to bring in line with one state — or, as `expand`, the marker "look at every
  /// repository of this identifier", turned into tasks when its turn comes.
  struct Task {
    RepositoryRef name;
    std::string path;
    StateRefs refs;
    /// Other repositories here with the same identifier, in the order objects are copied from
    /// them (at most max_siblings).
    std::vector<std::string> siblings;
    /// A want_commit job: `refs` holds the one commit; nothing is applied, presence is reported.
    bool commit_job = false;
    /// Fetched from before the announcements' clone URLs (the PR's `clone` tags).
    std::vector<std::string> extra_urls;
    /// Whose share of fetches it uses (hex): the PR's author, else the repository's owner.
    std::string author;
    /// The state came by sync: its fetch starts without waiting for a push.
    bool fetch_at_once = false;
    bool expand = false;
    /// With `expand`: the repository a push just brought objects to (copied from first).
    std::string hint;
  };

  /// One identifier's waiting work, in order.
  struct Lane {
    std::deque<Task> items;
    bool expand_pending = false;
  };

  // ---------------------------------------------------------------- lanes

  /// Queues a look at every repository named `identifier` (one pending look per identifier).
  void enqueue(const std::string& identifier, bool at_once = false, std::string hint = {}) {
    if (stopping) return;
    auto it = lanes.find(identifier);
    if (it != lanes.end() && it->second.expand_pending) {
      for (auto& item : it->second.items)
        if (item.expand) {
          item.fetch_at_once = item.fetch_at_once || at_once;
          if (!hint.empty()) item.hint = std::move(hint);
        }
      return;
    }
    Task marker;
    marker.name.identifier = identifier;
    marker.expand = true;
    marker.fetch_at_once = at_once;
    marker.hint = std::move(hint);
    if (!admit(identifier)) return;
    auto& lane = lanes[identifier];
    lane.expand_pending = true;
    lane.items.push_back(std::move(marker));
    ++waiting;
    wake();
  }

  /// Whether work for `identifier` may be queued: a new identifier needs a free lane, every item
  /// a free place. Makes the lane (and its turn) when new; counts a refusal.
  bool admit(const std::string& identifier) {
    bool known = lanes.count(identifier) > 0;
    if (waiting >= state_sync_task_limit || (!known && lanes.size() >= state_sync_queue_limit)) {
      bump(counters.dropped, "dropped");
      return false;
    }
    if (!known) {
      lanes[identifier];
      turns.push_back(identifier);
    }
    return true;
  }

  /// Queues `task` in its identifier's lane. A lane keeps one state task per repository: `newer`
  /// (a fresh look) replaces a waiting one, else (a retry, a fetch's end) the waiting one, which
  /// looks afresh anyway, is kept and `task` dropped.
  void add_task(Task task, bool newer) {
    if (stopping) return;
    const auto identifier = task.name.identifier;
    if (auto it = lanes.find(identifier); it != lanes.end())
      for (auto& item : it->second.items)
        if (same_work(item, task)) {
          if (newer) {
            task.fetch_at_once = task.fetch_at_once || item.fetch_at_once;
            item = std::move(task);
          }
          return;
        }
    if (!admit(identifier)) return;
    lanes[identifier].items.push_back(std::move(task));
    ++waiting;
    wake();
  }

  static bool same_work(const Task& a, const Task& b) {
    return !a.expand && a.path == b.path && a.commit_job == b.commit_job &&
           (!a.commit_job || a.refs.event_id == b.refs.event_id);
  }

  void wake() {
    if (!busy) next_state();
  }

  /// Takes the next task, one identifier's lane after another's (round-robin), and runs its local
  /// steps; the task's last step calls this again. A look (`expand` marker) becomes that
  /// identifier's tasks at the head of its lane.
  void next_state() {
    busy = false;
    while (!stopping && !turns.empty()) {
      auto identifier = std::move(turns.front());
      turns.pop_front();
      auto it = lanes.find(identifier);
      if (it == lanes.end()) continue;
      auto& lane = it->second;
      if (lane.items.empty()) {
        lanes.erase(it);
        continue;
      }
      auto task = std::move(lane.items.front());
      lane.items.pop_front();
      --waiting;
      if (task.expand) {
        lane.expand_pending = false;
        expand(lane, task);
        turns.push_front(std::move(identifier));  // the look was no task: its turn goes on
        continue;
      }
      if (lane.items.empty())
        lanes.erase(it);
      else
        turns.push_back(std::move(identifier));
      busy = true;
      ++counters.tasks;
      return check(std::move(task));
    }
  }

  /// The look `marker` becomes a task per repository of its identifier, at the head of `lane`;
  /// waiting tasks of the same repositories are older looks and go.
  void expand(Lane& lane, const Task& marker) {
    auto tasks = tasks_for(marker.name.identifier, marker.hint);
    for (auto& task : tasks) {
      task.fetch_at_once = marker.fetch_at_once;
      auto before = lane.items.size();
      lane.items.erase(std::remove_if(lane.items.begin(), lane.items.end(),
                                      [&](const Task& item) { return same_work(item, task); }),
                       lane.items.end());
      waiting -= before - lane.items.size();
    }
    for (auto it = tasks.rbegin(); it != tasks.rend(); ++it) lane.items.push_front(std::move(*it));
    waiting += tasks.size();
  }

  /// Every repository here named `identifier` that has an authorising state (its owner's newest),
  /// each with the siblings to copy its objects from: `hint` (just pushed) first, then those
  /// whose own state names one of its objects, then the rest, at most max_siblings.
  std::vector<Task> tasks_for(const std::string& identifier, const std::string& hint) {
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
      task.author = nostr::to_hex(owner);
      out.push_back(std::move(task));
    }
    // Which repositories' states name each object: the likeliest holders of it.
    std::map<std::string, std::vector<std::size_t>> holders;
    for (std::size_t i = 0; i < out.size(); ++i)
      for (const auto& id : state_ids(out[i])) holders[id].push_back(i);
    bool hint_here = std::find(paths.begin(), paths.end(), hint) != paths.end();
    for (auto& task : out) {
      auto take = [&](const std::string& path) {
        auto& chosen = task.siblings;
        if (path != task.path && chosen.size() < options.max_siblings &&
            std::find(chosen.begin(), chosen.end(), path) == chosen.end())
          chosen.push_back(path);
        return chosen.size() < options.max_siblings;
      };
      bool more = !hint_here || take(hint);
      for (const auto& id : state_ids(task))
        for (auto index : holders[id])
          if (more) more = take(out[index].path);
      for (const auto& path : paths)
        if (more) more = take(path);
    }
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
                       // Its objects are here: a fetch still waiting for them is not needed.
                       self->fetcher->cancel(fetch_key(*shared));
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
    auto source = std::move(task.siblings.front());
    task.siblings.erase(task.siblings.begin());
    bump(counters.copies, nullptr);
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
    if (!options.fetch_enabled || (hooks.may_fetch && !hooks.may_fetch(task.name)))
      return next_state();
    auto shared = std::make_shared<Task>(std::move(task));
    FetchJob job;
    job.key = fetch_key(*shared);
    job.repository = shared->path;
    job.ids = std::move(missing);
    job.author = shared->author;
    job.own_state = !shared->commit_job;
    job.urls = shared->extra_urls;  // a PR's own `clone` tags go first
    if (hooks.clone_urls)
      for (auto& url : hooks.clone_urls(shared->name)) job.urls.push_back(url);
    std::weak_ptr<Impl> weak = shared_from_this();
    if (!shared->fetch_at_once) {
      // A client's state: its push usually follows. Wait for it to begin, and while one to this
      // repository is under way, up to the fetch delay.
      job.delay = std::min(options.push_window, options.fetch_delay);
      auto deadline = std::chrono::steady_clock::now() + options.fetch_delay;
      job.wait_more = [weak, path = shared->path,
                       deadline]() -> std::optional<std::chrono::seconds> {
        auto self = weak.lock();
        auto now = std::chrono::steady_clock::now();
        if (!self || now >= deadline || !self->push_under_way(path)) return std::nullopt;
        auto left = std::chrono::ceil<std::chrono::seconds>(deadline - now);
        return std::min(std::max(self->options.push_window, std::chrono::seconds{1}), left);
      };
    }
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
    add_task(task, false);
  }

  /// A pull request's commit is a request of its own; a state's replaces the older state's.
  static std::string fetch_key(const Task& task) {
    return task.commit_job ? "pr " + task.path + " " + task.refs.event_id : "state " + task.path;
  }

  /// A push to `path` holds its lock now (it may bring the objects a state waits for).
  bool push_under_way(const std::string& path) const {
    return hooks.is_locked && hooks.is_locked(path);
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
    // A push holds the repository: nothing is read until it is over (it changes the refs).
    if (push_under_way(task.path)) {
      retry_later(std::move(task));
      return next_state();
    }
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
            self->retry_later(std::move(*shared));
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

  /// Queues `task` again after lock_retry_delay: only this repository is looked at again (a newer
  /// look at it waiting in its lane is kept instead).
  void retry_later(Task task) {
    auto timer = std::make_shared<net::steady_timer>(strand);
    timer->expires_after(lock_retry_delay);
    timer->async_wait([self = shared_from_this(), timer,
                       task = std::move(task)](boost::system::error_code e) mutable {
      if (!e && !self->stopping) self->add_task(std::move(task), false);
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
    if (family && result) family->Add({{"result", result}}).Increment();
  }

  /// Waiting work by identifier, and the identifiers in turn order (each once).
  std::map<std::string, Lane> lanes;
  std::deque<std::string> turns;
  std::size_t waiting = 0;  ///< items in all lanes
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
  net::post(impl_->strand, [impl = impl_, identifier = std::string(state->d_tag()), by_sync] {
    impl->enqueue(identifier, by_sync);
  });
}

void GitStateSync::recheck(const std::string& identifier) {
  if (impl_->options.git_binary.empty()) return;
  net::post(impl_->strand, [impl = impl_, identifier] { impl->enqueue(identifier, true); });
}

void GitStateSync::on_pushed(const RepositoryRef& name) {
  if (impl_->options.git_binary.empty()) return;
  // The pushed repository has the objects: its siblings copy from it first.
  net::post(impl_->strand, [impl = impl_, identifier = name.identifier,
                            path = impl_->runner.repositories.path_of(name).string()] {
    impl->enqueue(identifier, false, path);
  });
}

void GitStateSync::want_commit(const RepositoryRef& name, std::string commit,
                               std::vector<std::string> extra_urls, std::string author) {
  if (impl_->options.git_binary.empty() || !::graspd::git::is_object_id(commit)) return;
  net::post(impl_->strand, [impl = impl_, name, commit = std::move(commit),
                            urls = std::move(extra_urls), author = std::move(author)]() mutable {
    if (impl->stopping || !impl->runner.repositories.exists(name)) return;
    Impl::Task task;
    task.name = name;
    task.path = impl->runner.repositories.path_of(name).string();
    task.refs.event_id = commit;
    task.refs.refs.emplace("commit", std::move(commit));
    task.commit_job = true;
    task.extra_urls = std::move(urls);
    task.author = author.empty() ? nostr::to_hex(name.owner) : std::move(author);
    impl->add_task(std::move(task), true);
  });
}

void GitStateSync::stop() {
  net::post(impl_->strand, [impl = impl_] {
    impl->stopping = true;
    impl->lanes.clear();
    impl->turns.clear();
    impl->waiting = 0;
    impl->fetcher->stop();
  });
}

const GitStateSyncCounters& GitStateSync::counters() const {
  return impl_->counters;
}

}  // namespace graspd::runtime::git
