#include "runtime/git/engine/git_fetch_schedule.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace graspd::runtime::git {

namespace {

constexpr std::chrono::seconds rate_window{60};

bool is_hex_id(std::string_view text) {
  if (text.size() != 40 && text.size() != 64) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

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

namespace {

bool is_plain_clone_path(std::string_view path) {
  for (std::size_t i = 0; i < path.size(); ++i) {
    auto c = static_cast<unsigned char>(path[i]);
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') continue;
    bool escape = c == '%' && i + 2 < path.size() &&
                  std::isxdigit(static_cast<unsigned char>(path[i + 1])) &&
                  std::isxdigit(static_cast<unsigned char>(path[i + 2]));
    if (!escape) return false;
    i += 2;
  }
  return true;
}

}  // namespace

CloneUrlVerdict judge_clone_url(std::string_view url, const HostPort& service) {
  using V = CloneUrlVerdict;
  if (url.empty() || url.size() > 2048) return V::malformed;
  for (unsigned char c : url)
    if (c <= 0x20 || c == 0x7f) return V::malformed;
  auto parsed = parse_url(url);
  if (!parsed || parsed->host.empty()) return V::malformed;
  if (parsed->scheme != "http" && parsed->scheme != "https") return V::scheme;
  if (parsed->has_user_info) return V::user_info;
  if (!is_plain_host(parsed->host)) return V::host;
  if (url.find('#') != std::string_view::npos) return V::fragment;
  if (parsed->path_and_query.find('?') != std::string::npos) return V::query;
  if (!is_plain_clone_path(parsed->path_and_query)) return V::path;
  if (same_service(*parsed, service)) return V::this_service;
  return V::fetchable;
}

std::string_view verdict_name(CloneUrlVerdict verdict) {
  switch (verdict) {
    case CloneUrlVerdict::fetchable:
      return "fetchable";
    case CloneUrlVerdict::malformed:
      return "malformed";
    case CloneUrlVerdict::scheme:
      return "scheme";
    case CloneUrlVerdict::user_info:
      return "user_info";
    case CloneUrlVerdict::host:
      return "host";
    case CloneUrlVerdict::query:
      return "query";
    case CloneUrlVerdict::fragment:
      return "fragment";
    case CloneUrlVerdict::path:
      return "path";
    case CloneUrlVerdict::this_service:
      return "this_service";
  }
  return "malformed";
}

bool is_fetchable_clone_url(std::string_view url, const HostPort& service) {
  return judge_clone_url(url, service) == CloneUrlVerdict::fetchable;
}

std::optional<FetchSource> fetch_source(std::string_view url, const HostPort& service) {
  if (!is_fetchable_clone_url(url, service)) return std::nullopt;
  auto parsed = parse_url(url);
  return FetchSource{std::string(url),
                     lowercase(parsed->host) + ":" + std::to_string(parsed->port)};
}

std::string_view outcome_name(FetchOutcome outcome) {
  switch (outcome) {
    case FetchOutcome::complete:
      return "complete";
    case FetchOutcome::incomplete:
      return "incomplete";
    case FetchOutcome::not_our_ref:
      return "not_our_ref";
    case FetchOutcome::failed:
      return "failed";
    case FetchOutcome::unreachable:
      return "unreachable";
    case FetchOutcome::cancelled:
      return "cancelled";
  }
  return "failed";
}

bool is_unreachable_error(std::string_view text) {
  // git over libcurl (LC_ALL=C): "Could not resolve host: x", "Failed to connect to x port n",
  // "Couldn't connect to server", "gnutls_handshake() failed", "SSL certificate problem",
  // "server certificate verification failed". A refused or timed-out connect is one of these.
  for (std::string_view marker :
       {"Could not resolve host", "Couldn't resolve host", "Failed to connect to",
        "Couldn't connect to server", "Connection refused", "gnutls_handshake", "SSL", "TLS",
        "certificate"})
    if (text.find(marker) != std::string_view::npos) return true;
  return false;
}

std::vector<std::string> refused_ids(std::string_view text) {
  constexpr std::string_view marker = "not our ref ";
  std::vector<std::string> out;
  for (auto at = text.find(marker); at != std::string_view::npos; at = text.find(marker, at)) {
    at += marker.size();
    auto end = at;
    while (end < text.size() && std::isxdigit(static_cast<unsigned char>(text[end]))) ++end;
    auto id = text.substr(at, end - at);
    if (is_hex_id(id) && std::find(out.begin(), out.end(), id) == out.end()) out.emplace_back(id);
  }
  return out;
}

FetchSchedule::Added FetchSchedule::add(FetchRequest request) {
  if (auto* existing = find_request(request.key)) {
    // A new event for the identifier: fresh ids and sources, backoff and expiry start over.
    existing->request = std::move(request);
    existing->generation = next_generation_++;
    existing->source = 0;
    existing->refused.clear();
    existing->rounds = 0;
    return Added::replaced;
  }
  if (requests_.size() >= limits_.max_requests) return Added::dropped;
  if (auto refusal = share_refusal(request)) return *refusal;
  Request entry;
  entry.request = std::move(request);
  entry.generation = next_generation_++;
  requests_.push_back(std::move(entry));
  return Added::queued;
}

std::optional<FetchAttempt> FetchSchedule::next(FetchTime now) {
  prune_hosts(now);
  if (running_ >= limits_.max_running) return std::nullopt;
  for (auto it = requests_.begin(); it != requests_.end();) {
    auto& r = *it;
    if (r.running_generation != 0 || r.request.ready_at > now) {
      ++it;
      continue;
    }
    const auto& sources = r.request.sources;
    bool kept = true;
    // Sources on skipped hosts are passed over; when that exhausts them, the request backs off.
    while (kept && r.request.ready_at <= now && r.source < sources.size() &&
           is_skipped(sources[r.source].host, now))
      kept = next_source(r, now);
    if (kept && sources.empty()) kept = next_source(r, now);
    if (!kept) {
      abandoned_.push_back(r.request.key);
      it = requests_.erase(it);
      continue;
    }
    if (r.request.ready_at > now) {  // went to backoff above
      ++it;
      continue;
    }
    const auto& source = sources[r.source];
    auto& host = hosts_[source.host];
    if (!may_start(host) || !within_shares(r)) {
      ++it;
      continue;
    }
    FetchAttempt attempt{r.request.key,    r.generation,        source.url, source.host, {},
                         r.request.author, r.request.repository};
    for (const auto& id : r.request.ids)
      if (!r.refused.count(id)) attempt.ids.push_back(id);
    r.running_generation = r.generation;
    ++host.running;
    host.starts.push_back(now);
    ++running_;
    if (!attempt.author.empty()) ++author_running_[attempt.author];
    if (!attempt.repository.empty()) ++repository_running_[attempt.repository];
    return attempt;
  }
  return std::nullopt;
}

void FetchSchedule::finish(const FetchAttempt& attempt, FetchOutcome outcome, FetchTime now,
                           const std::vector<std::string>& ids) {
  release(attempt);
  if (outcome == FetchOutcome::unreachable)
    hosts_[attempt.host].skipped_until = now + limits_.host_skip;
  auto it = std::find_if(requests_.begin(), requests_.end(),
                         [&](const Request& r) { return r.request.key == attempt.key; });
  if (it == requests_.end()) return;
  if (it->running_generation == attempt.generation) it->running_generation = 0;
  if (it->generation != attempt.generation) return;  // replaced while it ran
  auto& r = *it;
  bool kept = true;
  switch (outcome) {
    case FetchOutcome::complete:
    case FetchOutcome::cancelled:
      requests_.erase(it);
      return;
    case FetchOutcome::not_our_ref: {
      std::size_t before = r.refused.size();
      for (const auto& id : ids)
        if (std::find(attempt.ids.begin(), attempt.ids.end(), id) != attempt.ids.end())
          r.refused.insert(id);
      // Retry the rest from the same source at once, unless nothing was dropped (no progress) or
      // nothing is left to ask it for.
      bool progress = r.refused.size() > before;
      if (!progress || r.refused.size() >= r.request.ids.size()) kept = next_source(r, now);
      break;
    }
    case FetchOutcome::incomplete:
      if (!ids.empty()) r.request.ids = ids;
      kept = next_source(r, now);
      break;
    case FetchOutcome::failed:
    case FetchOutcome::unreachable:
      kept = next_source(r, now);
      break;
  }
  if (!kept) {
    abandoned_.push_back(r.request.key);
    requests_.erase(it);
  }
}

void FetchSchedule::defer(const FetchAttempt& attempt, FetchTime until) {
  release(attempt);
  // Not started after all: the host's rate does not count it.
  if (auto host = hosts_.find(attempt.host); host != hosts_.end() && !host->second.starts.empty())
    host->second.starts.pop_back();
  auto* r = find_request(attempt.key);
  if (!r) return;
  if (r->running_generation == attempt.generation) r->running_generation = 0;
  if (r->generation == attempt.generation) r->request.ready_at = until;
}

void FetchSchedule::remove(const std::string& key) {
  auto it = std::find_if(requests_.begin(), requests_.end(),
                         [&](const Request& r) { return r.request.key == key; });
  if (it != requests_.end()) requests_.erase(it);
}

std::vector<std::string> FetchSchedule::take_abandoned() {
  return std::exchange(abandoned_, {});
}

std::uint64_t FetchSchedule::take_backoffs() {
  return std::exchange(backoffs_, 0);
}

std::optional<FetchTime> FetchSchedule::wakeup(FetchTime now) const {
  std::optional<FetchTime> best;
  auto consider = [&](FetchTime at) {
    if (at > now && (!best || at < *best)) best = at;
  };
  for (const auto& r : requests_)
    if (r.running_generation == 0) consider(r.request.ready_at);
  for (const auto& [name, host] : hosts_) {
    if (!host.starts.empty() && host.starts.size() >= limits_.per_host_per_minute)
      consider(host.starts.front() + rate_window);
    if (host.skipped_until) consider(*host.skipped_until);
  }
  return best;
}

std::size_t FetchSchedule::skipped_hosts(FetchTime now) const {
  return static_cast<std::size_t>(std::count_if(hosts_.begin(), hosts_.end(), [&](const auto& h) {
    return h.second.skipped_until && *h.second.skipped_until > now;
  }));
}

const FetchRequest* FetchSchedule::find(const std::string& key) const {
  for (const auto& r : requests_)
    if (r.request.key == key) return &r.request;
  return nullptr;
}

FetchSchedule::Request* FetchSchedule::find_request(const std::string& key) {
  for (auto& r : requests_)
    if (r.request.key == key) return &r;
  return nullptr;
}

bool FetchSchedule::may_start(const Host& host) const {
  return host.running < limits_.per_host_running &&
         host.starts.size() < limits_.per_host_per_minute;
}

bool FetchSchedule::within_shares(const Request& r) const {
  auto below = [](const std::map<std::string, std::size_t>& running, const std::string& key,
                  std::size_t share) {
    if (share == 0 || key.empty()) return true;
    auto it = running.find(key);
    return it == running.end() || it->second < share;
  };
  return below(author_running_, r.request.author, limits_.per_author_running) &&
         below(repository_running_, r.request.repository, limits_.per_repository_running);
}

std::optional<FetchSchedule::Added> FetchSchedule::share_refusal(
    const FetchRequest& request) const {
  std::size_t by_author = 0, by_repository = 0;
  for (const auto& r : requests_) {
    if (!request.author.empty() && r.request.author == request.author) ++by_author;
    if (!request.repository.empty() && r.request.repository == request.repository &&
        !r.request.own_state)
      ++by_repository;
  }
  if (limits_.per_author_requests && by_author >= limits_.per_author_requests)
    return Added::author_share;
  if (limits_.per_repository_requests && !request.own_state &&
      by_repository >= limits_.per_repository_requests)
    return Added::repository_share;
  return std::nullopt;
}

bool FetchSchedule::is_skipped(const std::string& host, FetchTime now) const {
  auto it = hosts_.find(host);
  return it != hosts_.end() && it->second.skipped_until && *it->second.skipped_until > now;
}

bool FetchSchedule::next_source(Request& r, FetchTime now) {
  r.refused.clear();
  if (++r.source < r.request.sources.size()) return true;
  // Every source was tried: wait base·2^(n−1), capped, then start over — unless that is past the
  // request's expiry (the held event is gone by then).
  ++r.rounds;
  auto delay = limits_.backoff_cap;
  if (r.rounds <= 16)
    delay = std::min(limits_.backoff_cap, limits_.backoff_base * (1 << (r.rounds - 1)));
  r.source = 0;
  r.request.ready_at = now + delay;
  if (r.request.ready_at > r.request.expires_at) return false;
  ++backoffs_;
  return true;
}

void FetchSchedule::release(const FetchAttempt& attempt) {
  auto it = hosts_.find(attempt.host);
  if (it != hosts_.end() && it->second.running > 0) --it->second.running;
  if (running_ > 0) --running_;
  auto drop = [](std::map<std::string, std::size_t>& running, const std::string& key) {
    auto found = running.find(key);
    if (found == running.end()) return;
    if (--found->second == 0) running.erase(found);
  };
  drop(author_running_, attempt.author);
  drop(repository_running_, attempt.repository);
}

void FetchSchedule::prune_hosts(FetchTime now) {
  for (auto it = hosts_.begin(); it != hosts_.end();) {
    auto& host = it->second;
    while (!host.starts.empty() && host.starts.front() + rate_window <= now)
      host.starts.pop_front();
    if (host.skipped_until && *host.skipped_until <= now) host.skipped_until.reset();
    if (host.running == 0 && host.starts.empty() && !host.skipped_until)
      it = hosts_.erase(it);
    else
      ++it;
  }
}

}  // namespace graspd::runtime::git
