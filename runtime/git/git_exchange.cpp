// One git HTTP request: its answers, its git process and the streams between them.
#include "runtime/git/git_exchange.hpp"

namespace graspd::runtime::git {

Exchange::Exchange(std::shared_ptr<GitHttp::Shared> shared, beast::tcp_stream&& stream,
                   std::unique_ptr<HeaderParser> header, beast::flat_buffer&& buffer,
                   std::string remote_ip)
    : shared_(std::move(shared)),
      stream_(std::move(stream)),
      buffer_(std::move(buffer)),
      remote_ip_(std::move(remote_ip)),
      deadline_(stream_.get_executor()) {
  const auto& h = header->get();
  method_ = h.method();
  version_ = h.version();
  target_ = std::string(h.target());
  content_type_ = std::string(h[http::field::content_type]);
  content_encoding_ = std::string(h[http::field::content_encoding]);
  git_protocol_ = std::string(h["Git-Protocol"]);
  accept_ = std::string(h[http::field::accept]);
  expect_continue_ = beast::iequals(h[http::field::expect], "100-continue");
  content_length_ = header->content_length();
  parser_.emplace(std::move(*header));
  parser_->body_limit(shared_->options.max_body_bytes);
}

Exchange::~Exchange() {
  if (child_) child_->kill_and_forget();
  release_slot();
  unlock_push();
  if (connection_counted_) shared_->connections.release(remote_ip_);
}

void Exchange::start() {
  shared_->bump(shared_->counters.requests, &GitMetrics::requests);
  if (!shared_->connections.try_acquire(remote_ip_)) {
    shared_->bump(shared_->counters.connections_refused, &GitMetrics::connections);
    log::debug(log::components::git, "git connection from ", remote_ip_,
               " refused: NGIT_GIT_MAX_CONNECTIONS(_PER_IP) reached");
    return respond_text(503, "too many git connections from your address, retry later\n",
                        {{"Retry-After", "5"}});
  }
  connection_counted_ = true;
  if (method_ == http::verb::options) return respond(204, "", "");
  auto parsed = parse_git_target(target_);
  if (!parsed.target)
    return respond_text(parsed.status, parsed.status == 400 ? "bad request\n" : "not found\n");
  target = std::move(*parsed.target);
  if (target.repository.is_pr_submissions() && !shared_->options.pr_submissions)
    return respond_text(404, "not found\n");
  // §2.3: NIP-11 before the repository page.
  if (target.endpoint == GitEndpoint::page && !shared_->options.nip11.empty() &&
      accept_.find("application/nostr+json") != std::string::npos &&
      (method_ == http::verb::get || method_ == http::verb::head))
    return respond(200, "application/nostr+json", shared_->options.nip11);
  // An unknown submission area answers as an empty repository (GRASP-06): nothing is made on
  // disk until a push to it is accepted.
  if (!target.repository.is_pr_submissions() && !shared_->repositories.exists(target.repository)) {
    if (target.endpoint == GitEndpoint::page) return respond_page(404);
    return respond_text(404, "repository not found\n");
  }
  switch (target.endpoint) {
    case GitEndpoint::page:
      return respond_page(200);
    case GitEndpoint::info_refs:
      return start_info_refs();
    case GitEndpoint::upload_pack:
    case GitEndpoint::receive_pack:
      return start_rpc();
  }
}

void Exchange::cancel() {
  net::post(stream_.get_executor(), [self = shared_from_this()] { self->abort(); });
}

void Exchange::respond(unsigned status, std::string content_type, std::string body,
                       std::vector<std::pair<std::string, std::string>> headers) {
  if (answered_ || headers_sent_) return abort();
  answered_ = true;
  unlock_push();
  release_slot();
  auto response = std::make_shared<http::response<http::string_body>>(
      static_cast<http::status>(status), version_);
  add_common_headers(*response);
  if (!content_type.empty()) response->set(http::field::content_type, content_type);
  for (const auto& [name, value] : headers) response->set(name, value);
  response->body() = std::move(body);
  if (status != 204) response->prepare_payload();
  if (method_ == http::verb::head) response->body().clear();
  stream_.expires_after(shared_->options.idle_timeout);
  http::async_write(stream_, *response,
                    [self = shared_from_this(), response](beast::error_code error, std::size_t) {
                      if (error) return self->close();
                      self->linger();
                    });
}

void Exchange::respond_text(unsigned status, std::string body,
                            std::vector<std::pair<std::string, std::string>> headers) {
  if (status == 413) shared_->bump(shared_->counters.too_large, &GitMetrics::too_large);
  respond(status, "text/plain; charset=utf-8", std::move(body), std::move(headers));
}

void Exchange::respond_busy() {
  shared_->bump(shared_->counters.busy, &GitMetrics::busy);
  respond_text(503, "busy, retry later\n", {{"Retry-After", "5"}});
}

void Exchange::respond_page(unsigned status) {
  if (method_ != http::verb::get && method_ != http::verb::head) return method_not_allowed();
  if (status != 200)
    return respond(status, "text/html; charset=utf-8",
                   "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Not "
                   "found</title></head><body><p>No repository of that name is hosted "
                   "here.</p></body></html>\n");
  const auto& archived = shared_->hooks.archived;
  respond(200, "text/html; charset=utf-8",
          repository_page_html(target.repository, shared_->options.domain,
                               archived && archived(target.repository)));
}

void Exchange::method_not_allowed() {
  respond_text(
      405, "method not allowed\n",
      {{"Allow", target.endpoint == GitEndpoint::info_refs || target.endpoint == GitEndpoint::page
                     ? "GET, HEAD, OPTIONS"
                     : "POST, OPTIONS"}});
}

void Exchange::linger() {
  beast::error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  stream_.expires_after(std::chrono::seconds(2));
  discard_more();
}

void Exchange::discard_more() {
  constexpr std::size_t limit = 4 * 1024 * 1024;
  stream_.async_read_some(net::buffer(raw_),
                          [self = shared_from_this()](beast::error_code error, std::size_t n) {
                            self->discarded_ += n;
                            if (error || self->discarded_ > limit) return self->close();
                            self->discard_more();
                          });
}

void Exchange::close() {
  answered_ = true;
  beast::error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
  deadline_.cancel();
}

void Exchange::abort() {
  if (child_) child_->kill_and_forget();
  close();
}

std::vector<std::string> Exchange::git_argv(std::vector<std::string> command) const {
  const auto& o = shared_->options;
  std::vector<std::string> argv{
      shared_->git, "-c", "core.hooksPath=" + shared_->repositories.hooks_dir().string(), "-c",
      "transfer.fsckObjects=true", "-c", "receive.maxInputSize=" + std::to_string(o.max_body_bytes),
      "-c", "receive.denyNonFastForwards=false", "-c", "receive.denyDeletes=false", "-c",
      "receive.advertisePushOptions=false",
      // No detached `git gc --auto` after a push: it would run outside
      // the process cap and the time limit (maintenance runs under them).
      "-c", "receive.autogc=false", "-c", "gc.auto=0", "-c", "uploadpack.allowTipSHA1InWant=true",
      "-c", "uploadpack.allowReachableSHA1InWant=true", "-c", "uploadpack.allowFilter=true"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::vector<std::string> Exchange::git_environment(bool with_protocol) const {
  auto env = shared_->repositories.git_environment();
  if (with_protocol && is_valid_git_protocol(git_protocol_))
    env.push_back("GIT_PROTOCOL=" + git_protocol_);
  return env;
}

bool Exchange::spawn(std::vector<std::string> command, bool with_protocol) {
  auto spawned = spawn_child(stream_.get_executor(), git_argv(std::move(command)),
                             git_environment(with_protocol), shared_->repositories.root().string(),
                             0, 0, shared_->options.process_nice);
  if (!spawned) {
    log::error(log::components::git, "cannot start git: ", spawned.error().message);
    return false;
  }
  child_ = std::move(*spawned);
  ++shared_->counters.processes_started;
  read_stderr();
  return true;
}

void Exchange::read_stderr() {
  child_->err.async_read_some(
      net::buffer(child_->err_buffer),
      [self = shared_from_this(), child = child_.get()](beast::error_code error, std::size_t n) {
        if (error || self->child_.get() != child) return;
        auto& text = child->stderr_text;
        text.append(child->err_buffer.data(), n);
        if (text.size() > max_stderr) text.erase(0, text.size() - max_stderr);
        self->read_stderr();
      });
}

void Exchange::wait_exit(std::function<void(int)> done) {
  auto* child = child_.get();
  auto reap = [self = shared_from_this(), child, done](beast::error_code) {
    if (self->child_.get() != child) return;
    int status = 0;
    pid_t got = ::waitpid(child->pid, &status, WNOHANG);
    if (got == 0) {
      // Not yet (the pidfd fired early, or no pidfd): look again shortly.
      auto timer = std::make_shared<net::steady_timer>(self->stream_.get_executor());
      timer->expires_after(std::chrono::milliseconds(5));
      timer->async_wait([self, timer, done](beast::error_code) { self->wait_exit(done); });
      return;
    }
    child->reaped = true;
    child->exit_code = got == child->pid ? exit_code_of(status) : -1;
    done(child->exit_code);
  };
  if (child->exit.is_open())
    child->exit.async_wait(net::posix::descriptor_base::wait_read, reap);
  else
    net::post(stream_.get_executor(), [reap] { reap({}); });
}

void Exchange::arm_deadline() {
  deadline_.expires_after(shared_->options.process_timeout);
  deadline_.async_wait([weak = weak_from_this()](beast::error_code error) {
    if (error) return;
    if (auto self = weak.lock()) {
      self->shared_->bump(self->shared_->counters.timeouts, &GitMetrics::timeouts);
      log::info(log::components::git, "git request from ", self->remote_ip_, " took longer than ",
                self->shared_->options.process_timeout.count(), " s; killed");
      self->abort();
    }
  });
}

void Exchange::with_slot(std::function<void()> next) {
  if (shared_->git.empty()) return respond_busy();
  // Called by whichever thread frees a slot: continue on this exchange's strand.
  auto on_slot = [self = shared_from_this(), next]() mutable {
    net::post(self->stream_.get_executor(),
              [self, next = std::move(next)] { self->on_slot_granted(next); });
  };
  switch (shared_->take_slot(remote_ip_, std::move(on_slot))) {
    case ProcessSlots::Grant::taken:
      slot_ = true;
      return next();
    case ProcessSlots::Grant::full:
      return respond_busy();
    case ProcessSlots::Grant::queued:
      break;
  }
  waiting_for_slot_ = true;
  slot_timer_ = std::make_shared<net::steady_timer>(stream_.get_executor());
  slot_timer_->expires_after(shared_->options.queue_wait);
  slot_timer_->async_wait([self = shared_from_this()](beast::error_code error) {
    if (error || !self->waiting_for_slot_) return;
    self->waiting_for_slot_ = false;  // the slot, when it comes, is passed on
    self->respond_busy();
  });
}

void Exchange::on_slot_granted(const std::function<void()>& next) {
  if (!waiting_for_slot_ || answered_) return shared_->give_slot(remote_ip_);  // gave up meanwhile
  waiting_for_slot_ = false;
  slot_timer_->cancel();
  slot_ = true;
  next();
}

void Exchange::release_slot() {
  if (!slot_) return;
  if (child_ && !child_->reaped) child_->kill_and_forget();
  slot_ = false;
  shared_->give_slot(remote_ip_);
}

Exchange::BodyError Exchange::body_error_of(const beast::error_code& error) {
  if (error == http::error::body_limit) return BodyError::too_large;
  if (error == beast::error::timeout || error == net::error::eof ||
      error == http::error::end_of_stream || error == net::error::connection_reset ||
      error == net::error::operation_aborted || error == http::error::partial_message)
    return BodyError::gone;
  return BodyError::bad;
}

void Exchange::send_continue_once(std::function<void()> next) {
  if (!expect_continue_) return next();
  expect_continue_ = false;
  auto text = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
  net::async_write(stream_, net::buffer(*text),
                   [self = shared_from_this(), text, next](beast::error_code error, std::size_t) {
                     if (error) return self->close();
                     next();
                   });
}

std::chrono::steady_clock::duration Exchange::body_allowance() const {
  const auto& o = shared_->options;
  auto earned = std::chrono::seconds(o.min_body_rate ? body_received_ / o.min_body_rate : 0);
  return o.idle_timeout + earned - body_waited_;
}

void Exchange::read_raw(std::function<void(BodyError, std::size_t n, bool done)> handler) {
  if (parser_->is_done()) return handler(BodyError::none, 0, true);
  send_continue_once([self = shared_from_this(), handler] {
    auto& body = self->parser_->get().body();
    body.data = self->raw_.data();
    body.size = self->raw_.size();
    bool rated = self->shared_->options.min_body_rate > 0;
    auto wait = std::chrono::steady_clock::duration(self->shared_->options.idle_timeout);
    if (rated) wait = std::min(wait, self->body_allowance());
    if (wait <= decltype(wait)::zero()) return handler(BodyError::slow, 0, false);
    auto started = std::chrono::steady_clock::now();
    self->stream_.expires_after(wait);
    http::async_read_some(self->stream_, self->buffer_, *self->parser_,
                          [self, handler, rated, started](beast::error_code error, std::size_t) {
                            if (error == http::error::need_buffer) error = {};
                            auto n = self->raw_.size() - self->parser_->get().body().size;
                            self->body_received_ += n;
                            self->body_waited_ += std::chrono::steady_clock::now() - started;
                            if (error == beast::error::timeout && rated &&
                                self->body_allowance() <= decltype(self->body_allowance())::zero())
                              return handler(BodyError::slow, 0, false);
                            if (error) return handler(body_error_of(error), 0, false);
                            if (n == 0 && !self->parser_->is_done()) return self->read_raw(handler);
                            handler(BodyError::none, n, self->parser_->is_done() && n == 0);
                          });
  });
}

void Exchange::next_decoded(BodyHandler handler) {
  if (!inflater_) {
    return read_raw(
        [self = shared_from_this(), handler](BodyError error, std::size_t n, bool done) {
          if (error != BodyError::none) return handler(error, {});
          if (done) return handler(BodyError::none, {});
          handler(BodyError::none, std::string_view(self->raw_.data(), n));
        });
  }
  auto& z = *inflater_;
  if (z.avail_in > 0 && !inflate_ended_) {
    z.next_out = reinterpret_cast<Bytef*>(decoded_.data());
    z.avail_out = static_cast<uInt>(decoded_.size());
    int rc = ::inflate(&z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) inflate_ended_ = true;
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) return handler(BodyError::bad, {});
    auto produced = decoded_.size() - z.avail_out;
    decoded_total_ += produced;
    if (decoded_total_ > body_limit()) return handler(BodyError::too_large, {});
    if (produced > 0) return handler(BodyError::none, std::string_view(decoded_.data(), produced));
    if (rc == Z_BUF_ERROR && z.avail_in > 0) return handler(BodyError::bad, {});
  }
  read_raw([self = shared_from_this(), handler](BodyError error, std::size_t n, bool done) {
    if (error != BodyError::none) return handler(error, {});
    if (done) {
      // A truncated gzip stream is an error; data after its end is ignored.
      if (!self->inflate_ended_) return handler(BodyError::bad, {});
      return handler(BodyError::none, {});
    }
    if (self->inflate_ended_) return self->next_decoded(handler);
    self->inflater_->next_in = reinterpret_cast<Bytef*>(self->raw_.data());
    self->inflater_->avail_in = static_cast<uInt>(n);
    self->next_decoded(handler);
  });
}

bool Exchange::prepare_decoding() {
  if (content_encoding_.empty() || beast::iequals(content_encoding_, "identity")) return true;
  if (!beast::iequals(content_encoding_, "gzip") && !beast::iequals(content_encoding_, "x-gzip")) {
    respond_text(415, "unsupported content encoding\n");
    return false;
  }
  auto* z = new z_stream{};
  if (::inflateInit2(z, 16 + MAX_WBITS) != Z_OK) {
    delete z;
    respond_text(500, "internal error\n");
    return false;
  }
  inflater_.reset(z);
  return true;
}

void Exchange::answer_body_error(BodyError error) {
  if (child_) child_->kill_and_forget();
  if (error == BodyError::slow) {
    shared_->bump(shared_->counters.slow_bodies, &GitMetrics::slow);
    log::info(log::components::git, "git request from ", remote_ip_, " closed: its body came at ",
              "less than NGIT_GIT_MIN_BODY_RATE (", shared_->options.min_body_rate, " bytes/s)");
    return close();
  }
  if (headers_sent_ || error == BodyError::gone) return close();
  if (error == BodyError::too_large) return respond_text(413, "request body too large\n");
  respond_text(400, "bad request body\n");
}

void Exchange::pump_body() {
  pumping_body_ = true;
  next_decoded([self = shared_from_this()](BodyError error, std::string_view data) {
    if (error != BodyError::none) {
      self->body_done_ = true;
      return self->answer_body_error(error);
    }
    if (data.empty()) {
      beast::error_code ignored;
      if (self->child_) self->child_->in.close(ignored);  // git sees the end of its input
      self->body_done_ = true;
      if (self->exit_code_) self->complete(*self->exit_code_);
      return;
    }
    if (self->stdin_broken_) return self->pump_body();  // git stopped reading: discard
    self->write_stdin(data, [self] { self->pump_body(); });
  });
}

void Exchange::write_stdin(std::string_view data, std::function<void()> next) {
  net::async_write(child_->in, net::buffer(data.data(), data.size()),
                   [self = shared_from_this(), next](beast::error_code error, std::size_t) {
                     // git stopped reading (it answers already, or failed): its output and exit
                     // code tell the rest; the body is still read to its end.
                     if (error) self->stdin_broken_ = true;
                     next();
                   });
}

void Exchange::pump_output() {
  child_->out.async_read_some(net::buffer(out_),
                              [self = shared_from_this()](beast::error_code error, std::size_t n) {
                                if (n > 0)
                                  return self->send_chunk(std::string_view(self->out_.data(), n),
                                                          [self] { self->pump_output(); });
                                if (error) self->on_output_end();
                              });
}

void Exchange::send_headers(std::function<void()> next) {
  response_ = std::make_unique<http::response<http::empty_body>>(http::status::ok, version_);
  add_common_headers(*response_);
  response_->set(http::field::content_type, result_type_);
  response_->set(http::field::cache_control, "no-cache, max-age=0, must-revalidate");
  response_->set(http::field::pragma, "no-cache");
  response_->set(http::field::expires, "Fri, 01 Jan 1980 00:00:00 GMT");
  response_->chunked(true);
  serializer_ = std::make_unique<http::response_serializer<http::empty_body>>(*response_);
  headers_sent_ = true;
  stream_.expires_after(shared_->options.idle_timeout);
  http::async_write_header(stream_, *serializer_,
                           [self = shared_from_this(), next](beast::error_code error, std::size_t) {
                             if (error) return self->abort();
                             if (self->prefix_.empty()) return next();
                             auto prefix = std::make_shared<std::string>(std::move(self->prefix_));
                             self->prefix_.clear();
                             self->write_chunk(*prefix, [prefix, next] { next(); });
                           });
}

void Exchange::write_chunk(std::string_view data, std::function<void()> next) {
  stream_.expires_after(shared_->options.idle_timeout);
  net::async_write(stream_, http::make_chunk(net::const_buffer(data.data(), data.size())),
                   [self = shared_from_this(), next](beast::error_code error, std::size_t) {
                     if (error) return self->abort();
                     next();
                   });
}

void Exchange::send_chunk(std::string_view data, std::function<void()> next) {
  if (!headers_sent_)
    return send_headers([self = shared_from_this(), data, next] { self->write_chunk(data, next); });
  write_chunk(data, next);
}

void Exchange::finish_response() {
  if (answered_) return;
  answered_ = true;
  unlock_push();
  release_slot();
  auto finish = [self = shared_from_this()] {
    self->stream_.expires_after(self->shared_->options.idle_timeout);
    net::async_write(self->stream_, http::make_chunk_last(),
                     [self](beast::error_code, std::size_t) { self->linger(); });
  };
  if (!headers_sent_) return send_headers(finish);
  finish();
}

void Exchange::on_output_end() {
  wait_exit([self = shared_from_this()](int code) { self->on_exit(code); });
}

void Exchange::on_exit(int code) {
  if (answered_) return;
  exit_code_ = code;
  if (pumping_body_ && !body_done_) return;  // complete() once the body has been read
  complete(code);
}

void Exchange::complete(int code) {
  deadline_.cancel();
  if (answered_) return;
  if (code != 0) {
    log::info(log::components::git, target.service, " for ", remote_ip_, " exited with ", code,
              ": ", child_->stderr_text);
  }
  if (target.endpoint == GitEndpoint::receive_pack) {
    unlock_push();
    if (code == 0) return report_push();
  }
  if (!headers_sent_ && code != 0) return respond_text(500, "git failed\n");
  finish_response();
}

}  // namespace graspd::runtime::git
