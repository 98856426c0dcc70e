// The git endpoints (info/refs, upload-pack, receive-pack) and the authorisation of a push.
#include "runtime/git/git_exchange.hpp"

#include "messages/nostr/nip34.hpp"
#include "store/git/pr_submissions.hpp"

namespace graspd::runtime::git {

void Exchange::start_info_refs() {
  if (method_ != http::verb::get && method_ != http::verb::head) return method_not_allowed();
  result_type_ = "application/x-" + target.service + "-advertisement";
  bool v2 = target.service == "git-upload-pack" &&
            git_protocol_.find("version=2") != std::string::npos &&
            is_valid_git_protocol(git_protocol_);
  if (method_ == http::verb::head) {
    return respond(200, result_type_, "",
                   {{"Cache-Control", "no-cache, max-age=0, must-revalidate"},
                    {"Pragma", "no-cache"},
                    {"Expires", "Fri, 01 Jan 1980 00:00:00 GMT"}});
  }
  // As `git http-backend`: the service line for v0, none for protocol v2 (§3.2).
  if (!v2) prefix_ = pkt_line("# service=" + target.service + "\n") + "0000";
  with_slot([this] {
    if (!spawn({target.service.substr(4), "--stateless-rpc", "--advertise-refs", repository_path()},
               true))
      return respond_text(500, "git failed\n");
    beast::error_code ignored;
    child_->in.close(ignored);
    arm_deadline();
    pump_output();
  });
}

void Exchange::start_rpc() {
  if (method_ != http::verb::post) return method_not_allowed();
  auto expected = "application/x-" + target.service + "-request";
  if (!beast::iequals(content_type_, expected))
    return respond_text(415, "unsupported content type\n");
  if (content_length_ && *content_length_ > body_limit())
    return respond_text(413, "request body too large\n");
  parser_->body_limit(body_limit());
  result_type_ = "application/x-" + target.service + "-result";
  if (!prepare_decoding()) return;
  // The wall-clock limit covers reading the request too; no git process or lock is taken until
  // the part of the request git needs first has arrived.
  arm_deadline();
  if (target.endpoint != GitEndpoint::upload_pack) return read_commands();
  read_ahead([self = shared_from_this()] {
    self->with_slot([self] {
      if (!self->spawn({"upload-pack", "--stateless-rpc", self->repository_path()}, true))
        return self->respond_text(500, "git failed\n");
      auto head = std::make_shared<std::string>(std::move(self->head_));
      self->head_.clear();
      self->write_stdin(*head, [self, head] { self->pump_body(); });
      self->pump_output();
    });
  });
}

void Exchange::read_ahead(std::function<void()> next) {
  if (head_.size() >= max_read_ahead) return next();
  next_decoded([self = shared_from_this(), next](BodyError error, std::string_view data) {
    if (error != BodyError::none) return self->answer_body_error(error);
    if (data.empty()) return next();  // the whole body is here (pump_body sees its end again)
    self->head_.append(data);
    self->read_ahead(next);
  });
}

void Exchange::wait_for_push_lock(int attempt, std::function<void()> next) {
  if (lock_push()) return next();
  constexpr int max_attempts = 100;
  if (attempt >= max_attempts) return respond_busy();
  auto timer = std::make_shared<net::steady_timer>(stream_.get_executor());
  timer->expires_after(std::chrono::milliseconds(50));
  timer->async_wait([self = shared_from_this(), timer, attempt, next](beast::error_code error) {
    if (error || self->answered_) return;
    self->wait_for_push_lock(attempt + 1, next);
  });
}

bool Exchange::lock_push() {
  auto key = shared_->repositories.path_of(target.repository).string();
  if (!shared_->locks->try_lock(key)) return false;
  push_lock_ = key;
  return true;
}

void Exchange::unlock_push() {
  if (push_lock_.empty()) return;
  shared_->locks->unlock(push_lock_);
  push_lock_.clear();
}

void Exchange::read_commands() {
  next_decoded([self = shared_from_this()](BodyError error, std::string_view data) {
    if (error != BodyError::none) return self->answer_body_error(error);
    self->head_.append(data);
    auto parsed = ::graspd::git::parse_command_list(self->head_);
    if (parsed.status == ParseStatus::invalid) {
      // The rest of the list names the refs to answer `ng` for: read up to its flush first.
      bool whole = ::graspd::git::salvage_command_list(self->head_).consumed > 0;
      if (whole || data.empty() || self->head_.size() > max_command_list)
        return self->refuse_invalid(parsed.error);
      return self->read_commands();
    }
    if (parsed.status == ParseStatus::complete) return self->on_commands(std::move(parsed.list));
    if (data.empty()) return self->refuse_invalid("the command list ends early");
    if (self->head_.size() > max_command_list)
      return self->refuse_invalid("the command list is over 1 MiB");
    self->read_commands();
  });
}

bool PushRate::take(const std::string& ip, std::chrono::steady_clock::time_point now) {
  if (per_minute_ == 0) return true;
  // Forget the buckets that are full again (nothing to remember) once many are kept.
  constexpr std::size_t prune_at = 4096;
  if (buckets_.size() >= prune_at)
    std::erase_if(buckets_, [&](const auto& entry) {
      return refilled(entry.second, now) >= static_cast<double>(per_minute_);
    });
  auto [it, added] = buckets_.try_emplace(ip, Bucket{static_cast<double>(per_minute_), now});
  auto& bucket = it->second;
  bucket.tokens = refilled(bucket, now);
  bucket.at = now;
  if (bucket.tokens < 1.0) return false;
  bucket.tokens -= 1.0;
  return true;
}

double PushRate::refilled(const Bucket& bucket, std::chrono::steady_clock::time_point now) const {
  auto seconds = std::chrono::duration<double>(now - bucket.at).count();
  auto rate = static_cast<double>(per_minute_) / 60.0;
  return std::min(static_cast<double>(per_minute_), bucket.tokens + seconds * rate);
}

void Exchange::refuse_all(const std::string& reason, std::atomic<std::uint64_t>& counter,
                          prometheus::Counter* GitMetrics::*twin) {
  shared_->bump(counter, twin);
  decision_ = {};
  decision_.reason = reason;
  for (const auto& u : commands_.updates) decision_.refs.push_back({u.ref, false, reason});
  refuse_push();
}

std::optional<std::string> Exchange::nostr_refs_over(const ::graspd::git::RefMap& current) const {
  const auto& options = shared_->options;
  if (options.max_nostr_refs == 0 && options.max_nostr_ref_bytes == 0) return std::nullopt;
  const auto& prefix = nostr::nip34::refs_nostr_prefix;
  auto line_bytes = [](const std::string& ref) { return 40 + 1 + ref.size() + 1; };
  std::size_t count = 0;
  std::uint64_t bytes = 0;
  for (auto it = current.lower_bound(std::string(prefix));
       it != current.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    ++count;
    bytes += line_bytes(it->first);
  }
  std::size_t added = 0;
  std::uint64_t added_bytes = 0;
  for (const auto& u : commands_.updates) {
    if (u.ref.rfind(prefix, 0) != 0) continue;
    bool exists = current.count(u.ref) > 0;
    bool deletes = u.deletes();
    if (!exists && !deletes) ++added, added_bytes += line_bytes(u.ref);
    if (exists && deletes) --count, bytes -= line_bytes(u.ref);
  }
  // A push that adds none is never refused here: the maintainers' pushes of branches and tags go
  // through whatever refs/nostr holds.
  if (added == 0) return std::nullopt;
  if (options.max_nostr_refs && count + added > options.max_nostr_refs)
    return "too many refs/nostr refs: this push would leave " + std::to_string(count + added) +
           " in this repository, at most " + std::to_string(options.max_nostr_refs) + " are kept";
  if (options.max_nostr_ref_bytes && bytes + added_bytes > options.max_nostr_ref_bytes)
    return "too many refs/nostr refs: this push would leave " +
           std::to_string(bytes + added_bytes) + " bytes of them in this repository, at most " +
           std::to_string(options.max_nostr_ref_bytes);
  return std::nullopt;
}

void Exchange::refuse_invalid(const std::string& reason) {
  commands_ = ::graspd::git::salvage_command_list(head_);
  if (commands_.updates.empty()) {
    shared_->bump(shared_->counters.pushes_refused, &GitMetrics::refused);
    log::info(log::components::git, "push from ", remote_ip_, " refused: ", reason);
    return respond_text(400, "invalid push: " + reason + "\n");
  }
  decision_ = {};
  decision_.reason = "invalid push: " + reason;
  for (const auto& u : commands_.updates)
    decision_.refs.push_back({u.ref, false, decision_.reason});
  refuse_push();
}

std::uint64_t Exchange::body_limit() const {
  const auto& options = shared_->options;
  if (!target.repository.is_pr_submissions() || options.pr_bytes_per_hour_per_ip == 0)
    return options.max_body_bytes;
  return std::min(options.max_body_bytes, options.pr_bytes_per_hour_per_ip);
}

bool AreaBytes::available(const std::string& ip, std::chrono::steady_clock::time_point now) {
  return per_hour_ == 0 || budget(ip, now).bytes > 0;
}

void AreaBytes::charge(const std::string& ip, std::uint64_t bytes,
                       std::chrono::steady_clock::time_point now) {
  if (per_hour_ > 0) budget(ip, now).bytes -= static_cast<double>(bytes);
}

AreaBytes::Budget& AreaBytes::budget(const std::string& ip,
                                     std::chrono::steady_clock::time_point now) {
  const auto full = static_cast<double>(per_hour_);
  auto refilled = [&](const Budget& b) {
    auto hours = std::chrono::duration<double>(now - b.at).count() / 3600.0;
    return std::min(full, b.bytes + hours * full);
  };
  constexpr std::size_t prune_at = 4096;
  if (budgets_.size() >= prune_at)
    std::erase_if(budgets_, [&](const auto& entry) { return refilled(entry.second) >= full; });
  auto [it, added] = budgets_.try_emplace(ip, Budget{full, now});
  it->second.bytes = refilled(it->second);
  it->second.at = now;
  return it->second;
}

std::string Exchange::repository_path() const {
  const auto& repositories = shared_->repositories;
  if (target.repository.is_pr_submissions() && !repositories.exists(target.repository))
    return repositories.empty_repository().string();
  return repositories.path_of(target.repository).string();
}

bool Exchange::needs_push_lock() const {
  if (target.repository.is_pr_submissions()) return true;
  return std::any_of(commands_.updates.begin(), commands_.updates.end(), [](const auto& u) {
    return u.ref.rfind(nostr::nip34::refs_nostr_prefix, 0) != 0;
  });
}

void Exchange::on_commands(::graspd::git::CommandList list) {
  commands_ = std::move(list);
  if (commands_.updates.empty()) {
    // The probe a client sends before a large push (§3.6): 200, empty result.
    return drain_then([self = shared_from_this()] { self->finish_response(); });
  }
  bool allowed = true;
  {
    std::lock_guard lock(shared_->mutex);
    allowed =
        shared_->push_rate.take(client_address_group(remote_ip_), std::chrono::steady_clock::now());
  }
  if (!allowed)
    return refuse_all("rate-limited: too many pushes from this address, retry in a minute",
                      shared_->counters.push_rate_refused, &GitMetrics::push_rate);
  if (target.repository.is_pr_submissions()) {
    std::lock_guard lock(shared_->mutex);
    allowed = shared_->area_bytes.available(client_address_group(remote_ip_),
                                            std::chrono::steady_clock::now());
  }
  if (!allowed)
    return refuse_all(
        "rate-limited: this address pushed its hourly share of pull request data, retry later",
        shared_->counters.push_rate_refused, &GitMetrics::push_rate);
  with_slot([self = shared_from_this()] {
    if (!self->needs_push_lock()) return self->list_refs();
    self->wait_for_push_lock(0, [self] { self->list_refs(); });
  });
}

void Exchange::list_refs() {
  auto path = repository_path();
  if (!spawn({"--git-dir=" + path, "for-each-ref", "--format=%(objectname) %(refname)",
              "refs/heads", "refs/tags", "refs/nostr"},
             false))
    return respond_text(500, "git failed\n");
  beast::error_code ignored;
  child_->in.close(ignored);
  read_refs(path);
}

void Exchange::read_refs(const std::string& path) {
  child_->out.async_read_some(
      net::buffer(out_), [self = shared_from_this(), path](beast::error_code error, std::size_t n) {
        self->refs_text_.append(self->out_.data(), n);
        if (self->refs_text_.size() > max_ref_listing) {
          self->child_->kill_and_forget();
          return self->respond_text(500, "too many refs\n");
        }
        if (!error) return self->read_refs(path);
        self->wait_exit([self](int code) { self->on_refs(code); });
      });
}

void Exchange::on_refs(int code) {
  if (code != 0) {
    log::warn(log::components::git, "for-each-ref failed (", code, "): ", child_->stderr_text);
    return respond_text(500, "git failed\n");
  }
  child_.reset();
  ::graspd::git::RefMap current;
  std::string_view text = refs_text_;
  while (!text.empty()) {
    auto eol = text.find('\n');
    auto line = text.substr(0, eol);
    auto space = line.find(' ');
    if (space != std::string_view::npos)
      current.emplace(std::string(line.substr(space + 1)), std::string(line.substr(0, space)));
    if (eol == std::string_view::npos) break;
    text.remove_prefix(eol + 1);
  }
  if (auto over = nostr_refs_over(current))
    return refuse_all(*over, shared_->counters.nostr_refs_refused, &GitMetrics::nostr_refs);
  std::vector<std::string> pr_ids;
  for (const auto& u : commands_.updates)
    if (u.ref.rfind(nostr::nip34::refs_nostr_prefix, 0) == 0)
      pr_ids.push_back(u.ref.substr(nostr::nip34::refs_nostr_prefix.size()));
  ::graspd::git::PushAuthority authority;
  if (shared_->hooks.authority) authority = shared_->hooks.authority(target.repository, pr_ids);
  decision_ = target.repository.is_pr_submissions()
                  ? ::graspd::git::authorise_submission_push(commands_.updates, current, authority)
                  : ::graspd::git::authorise_push(commands_.updates, current, authority);
  state_ = authority.state;
  if (!decision_.accepted) return refuse_push();
  if (target.repository.is_pr_submissions()) {
    // Made by its first accepted push, under the push lock (cleanup takes it too).
    if (auto created = shared_->repositories.create(target.repository); !created) {
      log::warn(log::components::git,
                "cannot create a pull request area: ", created.error().message);
      return respond_text(500, "git failed\n");
    }
  }
  auto path = shared_->repositories.path_of(target.repository).string();
  if (!spawn({"receive-pack", "--stateless-rpc", path}, false))
    return respond_text(500, "git failed\n");
  // What was read to find the command list goes first, then the rest of the body. Updates whose
  // ref is already where they want it are rebased on the current value (a no-op for git).
  if (::graspd::git::rebase_satisfied_updates(commands_, current))
    head_ = ::graspd::git::encode_command_list(commands_) + head_.substr(commands_.consumed);
  auto head = std::make_shared<std::string>(std::move(head_));
  head_.clear();
  write_stdin(*head, [self = shared_from_this(), head] { self->pump_body(); });
  pump_output();
}

void Exchange::refuse_push() {
  shared_->bump(shared_->counters.pushes_refused, &GitMetrics::refused);
  log::info(log::components::git, "push to ", nostr::encode_npub(target.repository.owner), "/",
            target.repository.identifier, " from ", remote_ip_, " refused: ", decision_.reason);
  // Nothing of this push will run: the slot and the lock are others' again while it drains.
  unlock_push();
  release_slot();
  bool side_band = commands_.capabilities.count("side-band-64k") > 0;
  auto report = std::make_shared<std::string>(refusal_report(decision_, side_band));
  // Read the pack the client is sending (bounded as any body), then answer: clients read the
  // answer only once their request is sent.
  drain_then([self = shared_from_this(), report] {
    self->send_chunk(*report, [self, report] { self->finish_response(); });
  });
}

void Exchange::drain_then(std::function<void()> next) {
  next_decoded([self = shared_from_this(), next](BodyError error, std::string_view data) {
    if (error != BodyError::none) return self->answer_body_error(error);
    if (data.empty()) return next();
    self->drain_then(next);
  });
}

/// An applied push: HEAD follows the state, and the answer ends once the push is reported, so the
/// daemon knows its refs (refs/nostr placeholders, restarted holds) before the client does.
void Exchange::report_push() {
  shared_->bump(shared_->counters.pushes_accepted, &GitMetrics::accepted);
  if (target.repository.is_pr_submissions()) {
    std::lock_guard lock(shared_->mutex);
    shared_->area_bytes.charge(client_address_group(remote_ip_),
                               std::max(body_received_, decoded_total_),
                               std::chrono::steady_clock::now());
  }
  if (state_) {
    if (auto branch = ::graspd::git::head_branch(*state_))
      shared_->repositories.set_head(target.repository, *branch);
  }
  if (!shared_->hooks.pushed) return finish_response();
  shared_->hooks.pushed(target.repository, commands_.updates,
                        [self = shared_from_this(), executor = stream_.get_executor()] {
                          net::post(executor, [self] { self->finish_response(); });
                        });
}

}  // namespace graspd::runtime::git
