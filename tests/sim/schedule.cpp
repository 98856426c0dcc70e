#include "tests/sim/schedule.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "messages/nostr/json.hpp"
#include "messages/nostr/nip34.hpp"
#include "tests/support/nostr_builders.hpp"

namespace graspd::sim {

namespace {

namespace kind = nostr::nip34::kind;
/// NIP-22 comment (not part of the NIP-34 vocabulary).
constexpr std::uint32_t kind_comment = 1111;

/// A private address no node may dial (the URL guard); a relay there holds nothing reachable.
constexpr const char* private_relay = "ws://10.0.0.5";

/// Builds the NIP-34 events of the simulated world. Keys are test::secret_key(byte): owners take
/// 1.., commenters 100...
class Authoring {
 public:
  struct Repo {
    std::uint8_t owner = 1;
    std::string identifier;
    std::vector<std::size_t> relays;
  };

  std::size_t announce_repo(std::string identifier, std::uint8_t owner,
                            std::vector<std::size_t> relays) {
    repos_.push_back(Repo{owner, std::move(identifier), std::move(relays)});
    return repos_.size() - 1;
  }
  const Repo& repo(std::size_t i) const { return repos_.at(i); }
  std::size_t repo_count() const { return repos_.size(); }
  std::optional<std::size_t> find_repo(const std::string& identifier) const {
    for (std::size_t i = 0; i < repos_.size(); ++i)
      if (repos_[i].identifier == identifier) return i;
    return std::nullopt;
  }

  std::string address(const Repo& repo) const {
    return std::to_string(kind::repo_announcement) + ":" + pubkey_hex(repo.owner) + ":" +
           repo.identifier;
  }

  /// The announcement lists the nodes in `nodes` (clone and relays) and the repository's relays;
  /// in a cluster, the cluster's one domain stands for them all.
  nostr::Event announcement(std::size_t i, const std::vector<std::size_t>& nodes,
                            std::int64_t created_at, bool with_private_relay) const {
    const auto& repo = repos_.at(i);
    nostr::Tag clone{"clone"};
    nostr::Tag relays{"relays"};
    std::vector<std::string> hosts;
    if (cluster && !nodes.empty()) hosts.push_back(cluster_host());
    for (auto node : nodes)
      if (!cluster) hosts.push_back(node_host(node));
    for (const auto& host : hosts) {
      clone.push_back("https://" + host + "/" + repo.identifier + ".git");
      relays.push_back("wss://" + host);
    }
    for (auto relay : repo.relays) relays.push_back(relay_url(relay));
    if (with_private_relay) relays.push_back(private_relay);
    if (clone.size() == 1) clone.push_back("https://elsewhere.example/" + repo.identifier + ".git");
    nostr::Tags tags{{"d", repo.identifier}, {"name", repo.identifier}, clone, relays};
    return test::signed_event(kind::repo_announcement, tags, created_at, "", repo.owner);
  }

  nostr::Event issue(std::size_t i, std::uint8_t author, std::int64_t created_at,
                     std::uint64_t n) const {
    const auto& repo = repos_.at(i);
    nostr::Tags tags{{"a", address(repo)}, {"p", pubkey_hex(repo.owner)}, {"subject", "issue"}};
    return test::signed_event(kind::issue, tags, created_at, "issue " + std::to_string(n), author);
  }

  /// A NIP-22 comment on `parent` under the thread rooted at `root` (an issue).
  nostr::Event comment(const nostr::Event& root, const nostr::Event& parent, std::uint8_t author,
                       std::int64_t created_at, std::uint64_t n) const {
    auto root_id = nostr::to_hex(root.id);
    nostr::Tags tags{{"E", root_id},
                     {"K", std::to_string(root.kind)},
                     {"P", nostr::to_hex(root.pubkey)},
                     {"e", nostr::to_hex(parent.id)},
                     {"k", std::to_string(parent.kind)},
                     {"p", nostr::to_hex(parent.pubkey)}};
    return test::signed_event(kind_comment, tags, created_at, "comment " + std::to_string(n),
                              author);
  }

  /// The owner's state (kind 30618): `refs/heads/main` at `commit`.
  nostr::Event state(std::size_t i, const std::string& commit, std::int64_t created_at) const {
    const auto& repo = repos_.at(i);
    nostr::Tags tags{
        {"d", repo.identifier}, {"refs/heads/main", commit}, {"HEAD", "ref: refs/heads/main"}};
    return test::signed_event(kind::repo_state, tags, created_at, "", repo.owner);
  }

  /// A NIP-09 deletion of `target` by `author` (its own author or a stranger). The `E` tag names
  /// the thread's root so that sync, which asks relays for events referring to roots, fetches it;
  /// only `e` tags delete.
  nostr::Event deletion(const nostr::Event& root, const nostr::Event& target, std::uint8_t author,
                        std::int64_t created_at) const {
    nostr::Tags tags{{"e", nostr::to_hex(target.id)}, {"k", std::to_string(target.kind)}};
    if (root.id != target.id) tags.push_back({"E", nostr::to_hex(root.id)});
    return test::signed_event(kind::deletion, tags, created_at, "deleted", author);
  }

 private:
  static std::string pubkey_hex(std::uint8_t key) {
    static std::map<std::uint8_t, std::string> cache;
    auto it = cache.find(key);
    if (it == cache.end()) {
      auto ev = test::signed_event(1, {}, 0, "", key);
      it = cache.emplace(key, nostr::to_hex(ev.pubkey)).first;
    }
    return it->second;
  }

  std::vector<Repo> repos_;

 public:
  bool cluster = false;
};

std::int64_t unix_at(std::int64_t at_ms) {
  return kEpoch + at_ms / 1000;
}

/// Draws from one engine in a fixed order; every choice of a run goes through it.
class Draw {
 public:
  explicit Draw(std::uint64_t seed) : rng_(seed) {}
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool chance(double p) { return static_cast<double>(rng_() % 1'000'000) < p * 1'000'000; }
  /// A non-empty subset of `from` (kept in order).
  std::vector<std::size_t> subset(const std::vector<std::size_t>& from) {
    std::vector<std::size_t> out;
    while (out.empty())
      for (auto x : from)
        if (chance(0.6)) out.push_back(x);
    return out;
  }

 private:
  std::mt19937_64 rng_;
};

std::vector<std::size_t> iota(std::size_t n) {
  std::vector<std::size_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = i;
  return out;
}

Action publish(std::int64_t at_ms, nostr::Event ev, std::vector<std::size_t> relays) {
  Action a;
  a.at_ms = at_ms;
  a.kind = ActionKind::publish;
  a.event = std::move(ev);
  a.relays = std::move(relays);
  return a;
}

/// An issue or comment of a drawn schedule: what a deletion may target.
struct Post {
  nostr::Event event;
  nostr::Event root;
  std::uint8_t author = 0;
  std::uint8_t root_author = 0;
  std::int64_t at_ms = 0;
  std::size_t repo = 0;
};

/// Deletions of issues and comments nothing replies to: deleting a parent would make its replies'
/// acceptance depend on arrival order (a reply arriving after the deletion has no thread), which
/// no fixed point can predict. One in four is sent by a stranger and must delete nothing: the
/// thread's root author when that is someone else (the store accepts it, as it names the author's
/// own root, and must still keep the reply), else another commenter (refused).
void draw_deletions(const SimOptions& options, Draw& draw, const Authoring& authoring,
                    const std::vector<Post>& posts, std::vector<Action>& out) {
  std::set<std::string> referenced;
  for (const auto& post : posts)
    for (const auto& tag : post.event.tags)
      if (tag.size() >= 2 && (tag[0] == "e" || tag[0] == "E")) referenced.insert(tag[1]);
  std::vector<const Post*> targets;
  for (const auto& post : posts)
    if (!referenced.count(nostr::to_hex(post.event.id))) targets.push_back(&post);
  const std::int64_t span = options.seconds * 1000;
  for (std::size_t n = 0; n < options.publications / 6 && !targets.empty(); ++n) {
    auto pick = draw.below(targets.size());
    const Post& post = *targets[pick];
    targets.erase(targets.begin() + static_cast<std::ptrdiff_t>(pick));
    auto author = post.author;
    if (draw.chance(0.25))
      author = post.root_author != post.author ? post.root_author
                                               : static_cast<std::uint8_t>(100 + (author - 99) % 5);
    auto at = std::min(span - 1, post.at_ms + static_cast<std::int64_t>(draw.below(600'000)));
    auto ev = authoring.deletion(post.root, post.event, author, unix_at(at));
    out.push_back(publish(at, ev, draw.subset(authoring.repo(post.repo).relays)));
  }
}

/// What becomes of a hosted repository's git data: mostly a state published and its commit pushed
/// to one of the listed nodes (the others fetch it from there); sometimes a state whose commit is
/// never pushed (held, then expired), sometimes nothing at all (the announcement expires).
void draw_git_data(Draw& draw, const Authoring& authoring, std::size_t repo,
                   const std::vector<std::size_t>& listed, std::int64_t announced_at,
                   std::vector<Action>& out) {
  auto fate = draw.below(10);
  if (fate == 9) return;
  auto at = announced_at + 1000 + static_cast<std::int64_t>(draw.below(300'000));
  auto high = draw.below(~std::uint64_t{0});
  auto low = draw.below(~std::uint64_t{0});
  auto state = authoring.state(repo, commit_id(high, low), unix_at(at));
  auto where = draw.subset(authoring.repo(repo).relays);
  if (fate >= 7) {
    out.push_back(publish(at, state, where));
    return;
  }
  Action push = publish(at, state, where);
  push.kind = ActionKind::push;
  push.node = listed[draw.below(listed.size())];
  out.push_back(std::move(push));
}

void draw_publications(const SimOptions& options, Draw& draw, Authoring& authoring,
                       std::vector<Action>& out) {
  const auto relays = iota(options.relays);
  const auto nodes = iota(options.nodes);
  const std::int64_t span = options.seconds * 1000;
  for (std::size_t i = 0; i < options.repos; ++i) {
    auto at = static_cast<std::int64_t>(draw.below(static_cast<std::uint64_t>(span / 4 + 1)));
    // One draw per statement: the order of a call's arguments is the compiler's (g++ and clang
    // differ), and a seed must replay the same in every build.
    auto owner = static_cast<std::uint8_t>(1 + draw.below(4));
    auto repo_relays = draw.subset(relays);
    auto repo = authoring.announce_repo("repo-" + std::to_string(i), owner, repo_relays);
    // Now and then a repository no node hosts (refused everywhere) or one naming a private relay.
    std::vector<std::size_t> listed =
        draw.chance(0.15) ? std::vector<std::size_t>{} : draw.subset(nodes);
    auto ev = authoring.announcement(repo, listed, unix_at(at), draw.chance(0.3));
    out.push_back(publish(at, ev, draw.subset(relays)));
    if (!listed.empty()) draw_git_data(draw, authoring, repo, listed, at, out);
  }
  std::vector<nostr::Event> issues;
  std::vector<std::pair<nostr::Event, nostr::Event>> comments;  // (root, comment)
  std::map<nostr::EventId, std::size_t> repo_of_root;
  std::map<nostr::EventId, std::uint8_t> root_author;
  std::vector<Post> posts;
  for (std::size_t n = 0; n < options.publications; ++n) {
    auto at = span / 4 +
              static_cast<std::int64_t>(draw.below(static_cast<std::uint64_t>(span - span / 4)));
    auto repo = draw.below(authoring.repo_count());
    auto where = draw.subset(authoring.repo(repo).relays);
    auto author = static_cast<std::uint8_t>(100 + draw.below(5));
    auto kind = draw.below(10);
    if (kind < 4 || issues.empty()) {
      auto ev = authoring.issue(repo, author, unix_at(at), n);
      repo_of_root[ev.id] = repo;
      root_author[ev.id] = author;
      issues.push_back(ev);
      posts.push_back({ev, ev, author, author, at, repo});
      out.push_back(publish(at, ev, where));
    } else if (kind < 7 || comments.empty()) {
      const auto& root = issues[draw.below(issues.size())];
      auto ev = authoring.comment(root, root, author, unix_at(at), n);
      comments.emplace_back(root, ev);
      posts.push_back({ev, root, author, root_author[root.id], at, repo_of_root[root.id]});
      out.push_back(publish(at, ev, draw.subset(authoring.repo(repo_of_root[root.id]).relays)));
    } else if (kind < 9) {
      auto [root, parent] = comments[draw.below(comments.size())];
      auto ev = authoring.comment(root, parent, author, unix_at(at), n);
      comments.emplace_back(root, ev);
      posts.push_back({ev, root, author, root_author[root.id], at, repo_of_root[root.id]});
      out.push_back(publish(at, ev, draw.subset(authoring.repo(repo_of_root[root.id]).relays)));
    } else {
      // A flood: many issues sharing one created_at (the pager must not loop or lose any).
      auto count = 5 + draw.below(20);
      for (std::uint64_t k = 0; k < count; ++k) {
        auto ev = authoring.issue(repo, author, unix_at(at), n * 100 + k);
        repo_of_root[ev.id] = repo;
        root_author[ev.id] = author;
        issues.push_back(ev);
        posts.push_back({ev, ev, author, author, at, repo});
        out.push_back(publish(at, ev, where));
      }
    }
  }
  draw_deletions(options, draw, authoring, posts, out);
}

Action draw_fault(const SimOptions& options, Draw& draw, std::int64_t at) {
  Action a;
  a.at_ms = at;
  a.relay = draw.below(options.relays);
  a.node = draw.below(options.nodes);
  switch (draw.below(7)) {
    case 0:
      a.kind = ActionKind::drop;
      break;
    case 1:
      a.kind = ActionKind::refuse;
      a.duration_ms = static_cast<std::int64_t>(1000 * (10 + draw.below(900)));
      break;
    case 2:
      a.kind = ActionKind::latency;
      a.value = 50 + draw.below(5000);
      a.duration_ms = static_cast<std::int64_t>(1000 * (10 + draw.below(600)));
      break;
    case 3:
      a.kind = ActionKind::rate_limit;
      a.value = 1 + draw.below(6);
      break;
    case 4:
      a.kind = ActionKind::cap_limit;
      a.value = options.min_limit_cap + draw.below(25);
      a.duration_ms = static_cast<std::int64_t>(1000 * (60 + draw.below(1800)));
      break;
    case 5:
      a.kind = ActionKind::garbage;
      a.value = draw.below(garbage_frames().size());
      break;
    default:
      a.kind = ActionKind::git_outage;
      a.duration_ms = static_cast<std::int64_t>(1000 * (10 + draw.below(900)));
      break;
  }
  return a;
}

void draw_events(double per_hour, std::int64_t seconds, Draw& draw,
                 const std::function<void(std::int64_t)>& emit) {
  auto count = static_cast<std::uint64_t>(per_hour * static_cast<double>(seconds) / 3600.0 + 0.5);
  for (std::uint64_t i = 0; i < count; ++i)
    emit(static_cast<std::int64_t>(draw.below(static_cast<std::uint64_t>(seconds * 1000))));
}

}  // namespace

const char* to_string(ActionKind kind) {
  switch (kind) {
    case ActionKind::publish:
      return "publish";
    case ActionKind::drop:
      return "drop";
    case ActionKind::refuse:
      return "refuse";
    case ActionKind::latency:
      return "latency";
    case ActionKind::rate_limit:
      return "rate_limit";
    case ActionKind::cap_limit:
      return "cap_limit";
    case ActionKind::garbage:
      return "garbage";
    case ActionKind::restart:
      return "restart";
    case ActionKind::push:
      return "push";
    case ActionKind::git_outage:
      return "git_outage";
  }
  return "?";
}

std::string describe(const Action& a) {
  char when[32];
  std::snprintf(when, sizeof when, "t=%lld.%03llds ", static_cast<long long>(a.at_ms / 1000),
                static_cast<long long>(a.at_ms % 1000));
  std::string out = when + std::string(to_string(a.kind));
  if ((a.kind == ActionKind::publish || a.kind == ActionKind::push) && a.event) {
    out += " kind " + std::to_string(a.event->kind) + " " +
           nostr::to_hex(a.event->id).substr(0, 12) + " to relays";
    for (auto r : a.relays) out += " " + std::to_string(r);
    if (a.kind == ActionKind::push) out += ", commit to node " + std::to_string(a.node);
    return out;
  }
  if (a.kind == ActionKind::restart) return out + " node " + std::to_string(a.node);
  if (a.kind == ActionKind::git_outage)
    return out + " node " + std::to_string(a.node) + " for " +
           std::to_string(a.duration_ms / 1000) + "s";
  out += " relay " + std::to_string(a.relay);
  if (a.kind == ActionKind::drop || a.kind == ActionKind::garbage)
    out += " node " + std::to_string(a.node);
  if (a.value) out += " value " + std::to_string(a.value);
  if (a.duration_ms) out += " for " + std::to_string(a.duration_ms / 1000) + "s";
  return out;
}

const std::vector<std::string>& garbage_frames() {
  static const std::vector<std::string> frames{
      "not json at all",
      "[\"EVENT\"]",
      "[\"EVENT\",\"nosuchsub\",{\"id\":\"zz\"}]",
      "[\"EOSE\",\"nosuchsub\"]",
      "[\"CLOSED\"]",
      "{\"EVENT\":1}",
      "[\"NOTICE\",\"" + std::string(300, 'x') + "\"]",
  };
  return frames;
}

std::string commit_id(std::uint64_t high, std::uint64_t low) {
  char hex[41];
  std::snprintf(hex, sizeof hex, "%016llx%016llx%08llx", static_cast<unsigned long long>(high),
                static_cast<unsigned long long>(low),
                static_cast<unsigned long long>((high ^ low) & 0xffffffffull));
  return hex;
}

std::string relay_url(std::size_t i) {
  return "wss://relay" + std::to_string(i) + ".sim";
}

std::string node_host(std::size_t i) {
  return "node" + std::to_string(i) + ".sim";
}

std::string cluster_host() {
  return "cluster.sim";
}

std::vector<Action> generate(const SimOptions& options) {
  Draw draw(options.seed);
  Authoring authoring;
  authoring.cluster = options.cluster;
  std::vector<Action> out;
  draw_publications(options, draw, authoring, out);
  draw_events(options.faults_per_hour, options.seconds, draw,
              [&](std::int64_t at) { out.push_back(draw_fault(options, draw, at)); });
  draw_events(options.restarts_per_hour, options.seconds, draw, [&](std::int64_t at) {
    Action a;
    a.at_ms = at;
    a.kind = ActionKind::restart;
    a.node = draw.below(options.nodes);
    out.push_back(a);
  });
  std::stable_sort(out.begin(), out.end(),
                   [](const Action& a, const Action& b) { return a.at_ms < b.at_ms; });
  return out;
}

namespace {

using Json = rapidjson::Value;

std::optional<std::uint64_t> uint_field(const Json& o, const char* name) {
  if (!o.HasMember(name) || !o[name].IsUint64()) return std::nullopt;
  return o[name].GetUint64();
}

std::optional<std::vector<std::size_t>> list_field(const Json& o, const char* name,
                                                   std::size_t bound) {
  if (!o.HasMember(name) || !o[name].IsArray()) return std::nullopt;
  std::vector<std::size_t> out;
  for (const auto& v : o[name].GetArray()) {
    if (!v.IsUint64() || v.GetUint64() >= bound) return std::nullopt;
    out.push_back(v.GetUint64());
  }
  return out;
}

/// Reads one entry of "actions"; `published` maps entry indices to their event and thread root.
std::optional<std::string> parse_action(
    const Json& o, std::size_t index, const SimOptions& options, Authoring& authoring,
    std::map<std::size_t, std::pair<nostr::Event, nostr::Event>>& published,
    std::vector<Action>& out) {
  if (!o.IsObject() || !o.HasMember("do") || !o["do"].IsString()) return "needs a \"do\" string";
  const std::string verb = o["do"].GetString();
  auto at = uint_field(o, "at");
  if (!at) return "needs \"at\" (seconds, a non-negative integer)";
  Action a;
  a.at_ms = static_cast<std::int64_t>(*at) * 1000;
  auto node = uint_field(o, "node").value_or(0);
  auto relay = uint_field(o, "relay").value_or(0);
  if (node >= options.nodes || relay >= options.relays) return "node or relay out of range";
  a.node = node;
  a.relay = relay;
  a.value = uint_field(o, "value").value_or(1);
  a.duration_ms = static_cast<std::int64_t>(uint_field(o, "for").value_or(60)) * 1000;
  if (verb == "delete") {
    auto to = list_field(o, "to", options.relays);
    auto on = uint_field(o, "on");
    if (!to || to->empty()) return "needs \"to\": relay indices";
    if (!on || !published.count(*on)) return "\"on\" must name an earlier issue or comment";
    std::string by = o.HasMember("by") && o["by"].IsString() ? o["by"].GetString() : "author";
    if (by != "author" && by != "stranger") return "\"by\" must be \"author\" or \"stranger\"";
    bool stranger = by == "stranger";
    auto [target, root] = published.at(*on);
    a.kind = ActionKind::publish;
    a.relays = *to;
    a.event = authoring.deletion(root, target, stranger ? 101 : 100,
                                 kEpoch + static_cast<std::int64_t>(*at));
  } else if (verb == "announce" || verb == "issue" || verb == "comment") {
    auto to = list_field(o, "to", options.relays);
    if (!to || to->empty()) return "needs \"to\": relay indices";
    a.kind = ActionKind::publish;
    a.relays = *to;
    const std::int64_t created_at = kEpoch + static_cast<std::int64_t>(*at);
    if (verb == "comment") {
      auto on = uint_field(o, "on");
      if (!on || !published.count(*on)) return "\"on\" must name an earlier issue or comment";
      auto [parent, root] = published.at(*on);
      a.event = authoring.comment(root, parent, 100, created_at, index);
      published[index] = {*a.event, root};
    } else {
      if (!o.HasMember("repo") || !o["repo"].IsString()) return "needs \"repo\": an identifier";
      std::string repo = o["repo"].GetString();
      auto found = authoring.find_repo(repo);
      if (verb == "announce") {
        auto relays = list_field(o, "relays", options.relays);
        auto nodes = list_field(o, "nodes", options.nodes);
        if (!relays || !nodes || found) return "announce needs \"relays\", \"nodes\", a new repo";
        auto i = authoring.announce_repo(repo, 1, *relays);
        a.event = authoring.announcement(i, *nodes, created_at, false);
      } else {
        if (!found) return "issue names a repo not announced before";
        a.event = authoring.issue(*found, 100, created_at, index);
        published[index] = {*a.event, *a.event};
      }
    }
  } else if (verb == "state" || verb == "push") {
    // A state naming commit `index` of the repository; "push" also pushes it to `node`.
    auto to = list_field(o, "to", options.relays);
    if (!to) return "needs \"to\": relay indices (may be empty)";
    if (!o.HasMember("repo") || !o["repo"].IsString()) return "needs \"repo\": an identifier";
    auto found = authoring.find_repo(o["repo"].GetString());
    if (!found) return verb + " names a repo not announced before";
    a.kind = verb == "push" ? ActionKind::push : ActionKind::publish;
    a.relays = *to;
    a.event = authoring.state(*found, commit_id(*found + 1, index),
                              kEpoch + static_cast<std::int64_t>(*at));
  } else if (verb == "git_outage") {
    a.kind = ActionKind::git_outage;
  } else if (verb == "drop") {
    a.kind = ActionKind::drop;
  } else if (verb == "refuse") {
    a.kind = ActionKind::refuse;
  } else if (verb == "latency") {
    a.kind = ActionKind::latency;
  } else if (verb == "rate_limit") {
    a.kind = ActionKind::rate_limit;
  } else if (verb == "cap_limit") {
    a.kind = ActionKind::cap_limit;
  } else if (verb == "garbage") {
    a.kind = ActionKind::garbage;
    a.value %= garbage_frames().size();
  } else if (verb == "restart") {
    a.kind = ActionKind::restart;
  } else {
    return "unknown \"do\": " + verb;
  }
  out.push_back(std::move(a));
  return std::nullopt;
}

}  // namespace

std::optional<ScenarioError> parse_scenario(const std::string& json, SimOptions& options,
                                            std::vector<Action>& actions) {
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) return ScenarioError{"not a JSON object"};
  options.nodes = uint_field(doc, "nodes").value_or(options.nodes);
  if (doc.HasMember("cluster") && doc["cluster"].IsBool())
    options.cluster = doc["cluster"].GetBool();
  options.relays = uint_field(doc, "relays").value_or(options.relays);
  options.seconds = static_cast<std::int64_t>(
      uint_field(doc, "seconds").value_or(static_cast<std::uint64_t>(options.seconds)));
  if (options.nodes == 0 || options.relays == 0 || options.nodes > 16 || options.relays > 16)
    return ScenarioError{"nodes and relays must be 1..16"};
  if (!doc.HasMember("actions") || !doc["actions"].IsArray())
    return ScenarioError{"needs an \"actions\" array"};
  Authoring authoring;
  authoring.cluster = options.cluster;
  std::map<std::size_t, std::pair<nostr::Event, nostr::Event>> published;
  std::size_t index = 0;
  for (const auto& entry : doc["actions"].GetArray()) {
    if (auto error = parse_action(entry, index, options, authoring, published, actions))
      return ScenarioError{"actions[" + std::to_string(index) + "]: " + *error};
    ++index;
  }
  std::stable_sort(actions.begin(), actions.end(),
                   [](const Action& a, const Action& b) { return a.at_ms < b.at_ms; });
  return std::nullopt;
}

}  // namespace graspd::sim
