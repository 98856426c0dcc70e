#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/git/git_pr_refs.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <deque>
#include <map>

#include "messages/nostr/nip34.hpp"
#include "runtime/git/git_process.hpp"
#include "runtime/ops/log.hpp"
#include "store/git/git_push.hpp"

namespace graspd::runtime::git {

namespace net = boost::asio;

namespace {

/// One process at a time, in the order asked: a deletion and a creation of one ref never swap.
constexpr std::size_t pr_refs_processes = 1;
constexpr std::size_t pr_refs_queue_limit = 1024;
constexpr std::chrono::seconds timeout{60};
/// A listing of refs/nostr (after a failed deletion batch) is bounded by
/// NGIT_GIT_MAX_NOSTR_REF_BYTES.
constexpr std::size_t pr_refs_max_output = 16 * 1024 * 1024;

bool is_event_id(std::string_view hex) {
  return hex.size() == 64 && std::all_of(hex.begin(), hex.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

/// The commits `cat-file --batch-check` reported as present commits (`<id> commit <size>`).
std::vector<std::string> present_commits(std::string_view out) {
  std::vector<std::string> present;
  while (!out.empty()) {
    auto eol = out.find('\n');
    auto line = out.substr(0, eol);
    if (line.size() > 48 && line.substr(40, 8) == " commit ")
      present.emplace_back(line.substr(0, 40));
    if (eol == std::string_view::npos) break;
    out.remove_prefix(eol + 1);
  }
  return present;
}

}  // namespace

struct GitPrRefs::Impl : std::enable_shared_from_this<GitPrRefs::Impl> {
  Impl(net::io_context& io, Repositories r, std::string git)
      : strand(net::make_strand(io)), repositories(std::move(r)), git_binary(std::move(git)) {}

  struct Job {
    std::vector<std::string> argv;
    std::string input;
    std::function<void(Collected)> done;
  };

  /// Queues `args` for git in repository `name` (on the strand).
  void add(const RepositoryRef& name, std::vector<std::string> args, std::string input,
           std::function<void(Collected)> done) {
    if (stopping) return;
    if (queue.size() >= pr_refs_queue_limit) {
      ++counters.dropped;
      return done(Collected{});
    }
    std::vector<std::string> argv{git_binary, "--git-dir=" + repositories.path_of(name).string(),
                                  "-c", "core.hooksPath=" + repositories.hooks_dir().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    queue.push_back(Job{std::move(argv), std::move(input), std::move(done)});
    next();
  }

  void next() {
    while (!stopping && running < pr_refs_processes && !queue.empty()) {
      auto job = std::move(queue.front());
      queue.pop_front();
      ++running;
      run_collect(strand, std::move(job.argv), repositories.git_environment(),
                  repositories.root().string(), std::move(job.input), timeout, pr_refs_max_output,
                  0, [self = shared_from_this(), done = std::move(job.done)](Collected result) {
                    --self->running;
                    done(std::move(result));
                    self->next();
                  });
    }
  }

  /// After a deletion batch failed: which of `asked` are still there, and at which commit.
  void left_after_failure(const RepositoryRef& name, std::vector<GitPrRefs::Ref> asked,
                          std::function<void(std::vector<GitPrRefs::Ref>)> done);

  /// Runs update-ref with `args`; counts and logs the outcome.
  void update_ref(const RepositoryRef& name, std::vector<std::string> args,
                  std::atomic<std::uint64_t>& counter) {
    add(name, std::move(args), "", [&counter](Collected result) {
      // Exit 128 with an old-value mismatch: the ref moved or exists; that writer wins.
      if (result.exit_code == 0)
        ++counter;
      else
        log::debug(log::components::git, "update-ref of a refs/nostr ref left it (",
                   result.exit_code, "): ", result.err);
    });
  }

  net::strand<net::io_context::executor_type> strand;
  Repositories repositories;
  std::string git_binary;
  GitPrRefsCounters counters;
  std::deque<Job> queue;
  std::size_t running = 0;
  bool stopping = false;
};

GitPrRefs::GitPrRefs(net::io_context& io, Repositories repositories, std::string git_binary)
    : impl_(std::make_shared<Impl>(io, std::move(repositories), std::move(git_binary))) {}

GitPrRefs::~GitPrRefs() {
  stop();
}

void GitPrRefs::check(const RepositoryRef& name, std::vector<std::string> commits,
                      std::function<void(std::vector<std::string>)> done) {
  std::string input;
  for (const auto& commit : commits)
    if (::graspd::git::is_object_id(commit)) input += commit + "\n";
  net::post(impl_->strand,
            [impl = impl_, name, input = std::move(input), done = std::move(done)]() mutable {
              if (impl->git_binary.empty() || input.empty() || !impl->repositories.exists(name))
                return done({});
              ++impl->counters.checks;
              impl->add(name, {"cat-file", "--batch-check"}, std::move(input),
                        [done = std::move(done)](Collected result) {
                          done(result.exit_code == 0 ? present_commits(result.out)
                                                     : std::vector<std::string>{});
                        });
            });
}

void GitPrRefs::set_ref(const RepositoryRef& name, const std::string& id_hex,
                        const std::string& commit) {
  if (!is_event_id(id_hex) || !::graspd::git::is_object_id(commit)) return;
  net::post(impl_->strand, [impl = impl_, name, id_hex, commit] {
    if (impl->git_binary.empty() || !impl->repositories.exists(name)) return;
    // The zero old value: created only where no such ref exists.
    impl->update_ref(
        name,
        {"update-ref", "-m", "graspd: PR event",
         std::string(nostr::nip34::refs_nostr_prefix) + id_hex, commit, ::graspd::git::zero_id},
        impl->counters.refs_set);
  });
}

namespace {

/// `<commit> <ref>` lines of for-each-ref: the commit each refs/nostr/<id> names, by id.
std::map<std::string, std::string, std::less<>> listed_refs(std::string_view out) {
  std::map<std::string, std::string, std::less<>> refs;
  const auto prefix = std::string(nostr::nip34::refs_nostr_prefix);
  while (!out.empty()) {
    auto eol = out.find('\n');
    auto line = out.substr(0, eol);
    if (line.size() > 41 + prefix.size() && line[40] == ' ' &&
        line.substr(41, prefix.size()) == prefix)
      refs.emplace(std::string(line.substr(41 + prefix.size())), std::string(line.substr(0, 40)));
    if (eol == std::string_view::npos) break;
    out.remove_prefix(eol + 1);
  }
  return refs;
}

}  // namespace

void GitPrRefs::delete_refs(const RepositoryRef& name, std::vector<Ref> refs,
                            std::function<void(std::vector<Ref>)> done) {
  std::string input;
  std::vector<Ref> asked;
  for (auto& ref : refs) {
    if (!is_event_id(ref.id_hex) || !::graspd::git::is_object_id(ref.commit)) continue;
    input += "delete " + std::string(nostr::nip34::refs_nostr_prefix) + ref.id_hex + " " +
             ref.commit + "\n";
    asked.push_back(std::move(ref));
  }
  net::post(impl_->strand, [impl = impl_, name, input = std::move(input), asked = std::move(asked),
                            done = std::move(done)]() mutable {
    // No git or no repository: no ref is there.
    if (impl->git_binary.empty() || asked.empty() || !impl->repositories.exists(name))
      return done({});
    auto n = asked.size();
    impl->add(name, {"update-ref", "-m", "graspd: placeholder expired", "--stdin"},
              std::move(input),
              [impl, name, n, asked = std::move(asked),
               done = std::move(done)](Collected result) mutable {
                if (result.exit_code == 0) {
                  impl->counters.refs_deleted += n;
                  return done({});
                }
                log::debug(log::components::git, "a refs/nostr deletion batch failed (",
                           result.exit_code, "): ", result.err);
                impl->left_after_failure(name, std::move(asked), std::move(done));
              });
  });
}

void GitPrRefs::Impl::left_after_failure(const RepositoryRef& name, std::vector<Ref> asked,
                                         std::function<void(std::vector<Ref>)> done) {
  if (stopping) return;
  add(name,
      {"for-each-ref", "--format=%(objectname) %(refname)",
       std::string(nostr::nip34::refs_nostr_prefix)},
      "", [asked = std::move(asked), done = std::move(done)](Collected result) mutable {
        if (result.exit_code != 0) {
          for (auto& ref : asked) ref.commit.clear();  // unknown: all again later
          return done(std::move(asked));
        }
        auto listed = listed_refs(result.out);
        std::vector<Ref> left;
        for (auto& ref : asked)
          if (auto it = listed.find(ref.id_hex); it != listed.end())
            left.push_back(Ref{std::move(ref.id_hex), it->second});
        done(std::move(left));
      });
}

void GitPrRefs::mirror(const RepositoryRef& from, const RepositoryRef& to,
                       const std::string& id_hex, const std::string& commit) {
  if (!is_event_id(id_hex) || !::graspd::git::is_object_id(commit)) return;
  net::post(impl_->strand, [impl = impl_, from, to, id_hex, commit] {
    const auto& repositories = impl->repositories;
    if (impl->git_binary.empty() || !repositories.exists(from) || !repositories.exists(to)) return;
    impl->add(to,
              {"fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
               repositories.path_of(from).string(), commit},
              "", [impl, to, id_hex, commit](Collected result) {
                // Failing is expected of a back-fill whose commit was never pushed to the area.
                if (result.exit_code != 0) {
                  log::debug(log::components::git, "copying a pull request's commit into ",
                             to.identifier, " failed (", result.exit_code, "): ", result.err);
                  return;
                }
                ++impl->counters.mirrored;
                impl->update_ref(to,
                                 {"update-ref", "-m", "graspd: PR event",
                                  std::string(nostr::nip34::refs_nostr_prefix) + id_hex, commit,
                                  ::graspd::git::zero_id},
                                 impl->counters.refs_set);
              });
  });
}

void GitPrRefs::remove_if_empty(const RepositoryRef& area, std::shared_ptr<RepositoryLocks> locks) {
  if (!area.is_pr_submissions()) return;
  net::post(impl_->strand, [impl = impl_, area, locks = std::move(locks)] {
    auto path = impl->repositories.path_of(area).string();
    if (impl->git_binary.empty() || !impl->repositories.exists(area)) return;
    // A push under way holds the lock and is about to add a ref: the area stays.
    if (!locks->try_lock(path)) return;
    impl->add(area, {"for-each-ref", "--count=1", "--format=%(refname)"}, "",
              [impl, area, locks, path](Collected result) {
                if (result.exit_code == 0 && result.out.empty() && impl->repositories.remove(area))
                  ++impl->counters.areas_removed;
                locks->unlock(path);
              });
  });
}

void GitPrRefs::stop() {
  net::post(impl_->strand, [impl = impl_] {
    impl->stopping = true;
    impl->queue.clear();
  });
}

const GitPrRefsCounters& GitPrRefs::counters() const {
  return impl_->counters;
}

}  // namespace graspd::runtime::git
