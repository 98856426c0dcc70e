#include <utility>  // before Asio, see toolchain.md §1

#include "runtime/git_exchange.hpp"

namespace graspd::runtime::git {

namespace {

std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/bin:/bin";
  while (true) {
    auto colon = dirs.find(':');
    auto dir = std::string(dirs.substr(0, colon));
    if (!dir.empty()) {
      auto candidate = dir + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return "";
}

}  // namespace

// ------------------------------------------------------------------------------------------------

GitHttp::GitHttp(Repositories repositories, GitHttpOptions options, GitHttpHooks hooks,
                 prometheus::Registry* registry)
    : shared_(
          std::make_shared<Shared>(std::move(repositories), std::move(options), std::move(hooks))) {
  if (registry) shared_->metrics = std::make_unique<GitMetrics>(*registry);
  shared_->git =
      find_in_path(shared_->options.git_binary.empty() ? "git" : shared_->options.git_binary);
  if (shared_->git.empty())
    log::warn(component, "git was not found in PATH: git requests are answered 503");
}

GitHttp::~GitHttp() {
  stop();
}

HttpHandoffPredicate GitHttp::predicate() const {
  return [](std::string_view target) { return is_git_path(target); };
}

HttpHandoffHandler GitHttp::handler() {
  return [shared = shared_](beast::tcp_stream&& stream, std::unique_ptr<HeaderParser> parser,
                            beast::flat_buffer&& buffer, std::string remote_ip) {
    auto exchange = std::make_shared<Exchange>(shared, std::move(stream), std::move(parser),
                                               std::move(buffer), std::move(remote_ip));
    {
      std::lock_guard lock{shared->mutex};
      if (shared->stopping) return;
      // Forget finished exchanges while adding: the list stays as long as the open ones.
      auto& list = shared->exchanges;
      list.erase(std::remove_if(list.begin(), list.end(), [](auto& w) { return w.expired(); }),
                 list.end());
      list.push_back(exchange);
    }
    exchange->start();
  };
}

void GitHttp::stop() {
  std::vector<std::weak_ptr<Exchange>> open;
  {
    std::lock_guard lock{shared_->mutex};
    if (shared_->stopping) return;
    shared_->stopping = true;
    open.swap(shared_->exchanges);
  }
  for (auto& weak : open)
    if (auto exchange = weak.lock()) exchange->cancel();
}

const GitHttpCounters& GitHttp::counters() const {
  return shared_->counters;
}

const Repositories& GitHttp::repositories() const {
  return shared_->repositories;
}

const std::string& GitHttp::git_binary() const {
  return shared_->git;
}

bool GitHttp::try_lock_repository(const std::string& path) {
  std::lock_guard lock{shared_->mutex};
  return shared_->pushing.insert(path).second;
}

void GitHttp::unlock_repository(const std::string& path) {
  std::lock_guard lock{shared_->mutex};
  shared_->pushing.erase(path);
}

}  // namespace graspd::runtime::git
