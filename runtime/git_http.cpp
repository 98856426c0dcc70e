#include <utility>  // before Asio, see toolchain.md §1

#include "runtime/git_http.hpp"

#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "messages/nostr/nip19.hpp"
#include "runtime/git_process.hpp"
#include "runtime/http_routes.hpp"
#include "runtime/log.hpp"

namespace graspd::runtime::git {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace fs = std::filesystem;
using ::graspd::git::ParseStatus;
using ::graspd::git::PushDecision;

namespace {

constexpr std::string_view component = "git";
constexpr std::size_t io_chunk = 64 * 1024;
/// A push's command list larger than this is refused (a few thousand refs).
constexpr std::size_t max_command_list = 1024 * 1024;
/// Refs listed by for-each-ref at most (bytes of output).
constexpr std::size_t max_ref_listing = 16 * 1024 * 1024;
constexpr std::size_t max_stderr = 2048;

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

class Exchange;

/// The Prometheus side of GitHttpCounters (fixed labels only).
struct GitMetrics {
  explicit GitMetrics(prometheus::Registry& registry)
      : requests(&prometheus::BuildCounter()
                      .Name("graspd_git_requests_total")
                      .Help("Git HTTP requests (every answer under /<npub>/)")
                      .Register(registry)
                      .Add({})),
        processes(prometheus::BuildGauge()
                      .Name("graspd_git_processes")
                      .Help("Git processes running for clients")
                      .Register(registry)
                      .Add({})),
        refusals(prometheus::BuildCounter()
                     .Name("graspd_git_refused_total")
                     .Help("Git requests refused for a limit: busy (process cap or a push in "
                           "progress, 503), too_large (413), timeout (killed)")
                     .Register(registry)),
        pushes(prometheus::BuildCounter()
                   .Name("graspd_git_pushes_total")
                   .Help("Pushes by result: accepted (applied) or refused (authorisation or an "
                         "invalid command list)")
                   .Register(registry)),
        busy(&refusals.Add({{"reason", "busy"}})),
        too_large(&refusals.Add({{"reason", "too_large"}})),
        timeouts(&refusals.Add({{"reason", "timeout"}})),
        accepted(&pushes.Add({{"result", "accepted"}})),
        refused(&pushes.Add({{"result", "refused"}})) {}

  prometheus::Counter* requests;
  prometheus::Gauge& processes;
  prometheus::Family<prometheus::Counter>& refusals;
  prometheus::Family<prometheus::Counter>& pushes;
  prometheus::Counter* busy;
  prometheus::Counter* too_large;
  prometheus::Counter* timeouts;
  prometheus::Counter* accepted;
  prometheus::Counter* refused;
};

struct GitHttp::Shared {
  Repositories repositories;
  GitHttpOptions options;
  GitHttpHooks hooks;
  GitHttpCounters counters;
  std::unique_ptr<GitMetrics> metrics;
  std::string git;
  std::mutex mutex;
  std::set<std::string> pushing;                   // repository paths; guarded by mutex
  std::vector<std::weak_ptr<Exchange>> exchanges;  // guarded by mutex
  bool stopping = false;                           // guarded by mutex

  Shared(Repositories r, GitHttpOptions o, GitHttpHooks h)
      : repositories(std::move(r)), options(std::move(o)), hooks(std::move(h)) {}

  bool take_slot() {
    auto running = counters.processes_running.load();
    while (true) {
      if (running >= options.max_processes) return false;
      if (counters.processes_running.compare_exchange_weak(running, running + 1)) {
        if (metrics) metrics->processes.Increment();
        return true;
      }
    }
  }
  void give_slot() {
    --counters.processes_running;
    if (metrics) metrics->processes.Decrement();
  }
  /// Counts one event in the counter and in its Prometheus twin.
  void bump(std::atomic<std::uint64_t>& counter, prometheus::Counter* GitMetrics::*twin) {
    ++counter;
    if (metrics) (metrics.get()->*twin)->Increment();
  }
};

class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<GitHttp::Shared> shared, beast::tcp_stream&& stream,
           std::unique_ptr<HeaderParser> header, beast::flat_buffer&& buffer, std::string remote_ip)
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

  ~Exchange() {
    if (child_) child_->kill_and_forget();
    release_slot();
    unlock_push();
  }

  void start() {
    shared_->bump(shared_->counters.requests, &GitMetrics::requests);
    if (method_ == http::verb::options) return respond(204, "", "");
    auto parsed = parse_git_target(target_);
    if (!parsed.target)
      return respond_text(parsed.status, parsed.status == 400 ? "bad request\n" : "not found\n");
    target = std::move(*parsed.target);
    // §2.3: NIP-11 before the repository page.
    if (target.endpoint == GitEndpoint::page && !shared_->options.nip11.empty() &&
        accept_.find("application/nostr+json") != std::string::npos &&
        (method_ == http::verb::get || method_ == http::verb::head))
      return respond(200, "application/nostr+json", shared_->options.nip11);
    if (!shared_->repositories.exists(target.repository)) {
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

  /// Kills the git process and closes the connection (server shutdown). Any thread.
  void cancel() {
    net::post(stream_.get_executor(), [self = shared_from_this()] { self->abort(); });
  }

  GitTarget target;

 private:
  // ---------------------------------------------------------------- simple answers

  template <class Body>
  void add_common_headers(http::response<Body>& response) {
    response.set(http::field::server, "graspd");
    for (const auto& [name, value] : cors_headers()) response.set(name, value);
    response.keep_alive(false);
  }

  void respond(unsigned status, std::string content_type, std::string body,
               std::vector<std::pair<std::string, std::string>> headers = {}) {
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

  void respond_text(unsigned status, std::string body,
                    std::vector<std::pair<std::string, std::string>> headers = {}) {
    if (status == 413) shared_->bump(shared_->counters.too_large, &GitMetrics::too_large);
    respond(status, "text/plain; charset=utf-8", std::move(body), std::move(headers));
  }

  void respond_busy() {
    shared_->bump(shared_->counters.busy, &GitMetrics::busy);
    respond_text(503, "busy, retry later\n", {{"Retry-After", "5"}});
  }

  void respond_page(unsigned status) {
    if (method_ != http::verb::get && method_ != http::verb::head) return method_not_allowed();
    if (status != 200)
      return respond(status, "text/html; charset=utf-8",
                     "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Not "
                     "found</title></head><body><p>No repository of that name is hosted "
                     "here.</p></body></html>\n");
    respond(200, "text/html; charset=utf-8",
            repository_page_html(target.repository, shared_->options.domain));
  }

  void method_not_allowed() {
    respond_text(
        405, "method not allowed\n",
        {{"Allow", target.endpoint == GitEndpoint::info_refs || target.endpoint == GitEndpoint::page
                       ? "GET, HEAD, OPTIONS"
                       : "POST, OPTIONS"}});
  }

  /// After an answer: stop sending, discard what the client may still send (bounded), close; a
  /// close with unread input would reset the connection and could destroy the answer.
  void linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(2));
    discard_more();
  }

  void discard_more() {
    constexpr std::size_t limit = 4 * 1024 * 1024;
    stream_.async_read_some(net::buffer(raw_),
                            [self = shared_from_this()](beast::error_code error, std::size_t n) {
                              self->discarded_ += n;
                              if (error || self->discarded_ > limit) return self->close();
                              self->discard_more();
                            });
  }

  void close() {
    answered_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
    deadline_.cancel();
  }

  void abort() {
    if (child_) child_->kill_and_forget();
    close();
  }

  // ---------------------------------------------------------------- processes

  std::vector<std::string> git_argv(std::vector<std::string> command) const {
    const auto& o = shared_->options;
    std::vector<std::string> argv{shared_->git,
                                  "-c",
                                  "core.hooksPath=" + shared_->repositories.hooks_dir().string(),
                                  "-c",
                                  "transfer.fsckObjects=true",
                                  "-c",
                                  "receive.maxInputSize=" + std::to_string(o.max_body_bytes),
                                  "-c",
                                  "receive.denyNonFastForwards=false",
                                  "-c",
                                  "receive.denyDeletes=false",
                                  "-c",
                                  "receive.advertisePushOptions=false",
                                  "-c",
                                  "uploadpack.allowTipSHA1InWant=true",
                                  "-c",
                                  "uploadpack.allowReachableSHA1InWant=true",
                                  "-c",
                                  "uploadpack.allowFilter=true"};
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
  }

  std::vector<std::string> git_environment(bool with_protocol) const {
    auto home = shared_->repositories.home_dir().string();
    std::vector<std::string> env{"PATH=/usr/local/bin:/usr/bin:/bin",
                                 "HOME=" + home,
                                 "XDG_CONFIG_HOME=" + home,
                                 "GIT_CONFIG_NOSYSTEM=1",
                                 "GIT_TERMINAL_PROMPT=0",
                                 "LC_ALL=C"};
    if (with_protocol && is_valid_git_protocol(git_protocol_))
      env.push_back("GIT_PROTOCOL=" + git_protocol_);
    return env;
  }

  /// Spawns git; false (logged) when it cannot be started.
  bool spawn(std::vector<std::string> command, bool with_protocol) {
    std::string error;
    child_ = spawn_child(stream_.get_executor(), git_argv(std::move(command)),
                         git_environment(with_protocol), shared_->repositories.root().string(), 0,
                         &error);
    if (!child_) {
      log::error(component, "cannot start git: ", error);
      return false;
    }
    ++shared_->counters.processes_started;
    read_stderr();
    return true;
  }

  void read_stderr() {
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

  /// Calls `done(exit_code)` once the current child has exited (pidfd readable, then reaped).
  void wait_exit(std::function<void(int)> done) {
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

  void arm_deadline() {
    deadline_.expires_after(shared_->options.process_timeout);
    deadline_.async_wait([weak = weak_from_this()](beast::error_code error) {
      if (error) return;
      if (auto self = weak.lock()) {
        self->shared_->bump(self->shared_->counters.timeouts, &GitMetrics::timeouts);
        log::info(component, "git request from ", self->remote_ip_, " took longer than ",
                  self->shared_->options.process_timeout.count(), " s; killed");
        self->abort();
      }
    });
  }

  bool take_slot() {
    if (shared_->git.empty() || !shared_->take_slot()) return false;
    slot_ = true;
    return true;
  }

  /// The answer is complete (its last bytes may still be in flight): the slot is free again. A
  /// process still running at this point is killed first, so the cap stays true.
  void release_slot() {
    if (!slot_) return;
    if (child_ && !child_->reaped) child_->kill_and_forget();
    slot_ = false;
    shared_->give_slot();
  }

  // ---------------------------------------------------------------- request bodies

  enum class BodyError { none, too_large, bad, gone };

  using BodyHandler = std::function<void(BodyError, std::string_view data)>;

  static BodyError body_error_of(const beast::error_code& error) {
    if (error == http::error::body_limit) return BodyError::too_large;
    if (error == beast::error::timeout || error == net::error::eof ||
        error == http::error::end_of_stream || error == net::error::connection_reset ||
        error == net::error::operation_aborted || error == http::error::partial_message)
      return BodyError::gone;
    return BodyError::bad;
  }

  void send_continue_once(std::function<void()> next) {
    if (!expect_continue_) return next();
    expect_continue_ = false;
    auto text = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
    net::async_write(stream_, net::buffer(*text),
                     [self = shared_from_this(), text, next](beast::error_code error, std::size_t) {
                       if (error) return self->close();
                       next();
                     });
  }

  /// Next raw body bytes into raw_; `n` = 0 and done at the end.
  void read_raw(std::function<void(BodyError, std::size_t n, bool done)> handler) {
    if (parser_->is_done()) return handler(BodyError::none, 0, true);
    send_continue_once([self = shared_from_this(), handler] {
      auto& body = self->parser_->get().body();
      body.data = self->raw_.data();
      body.size = self->raw_.size();
      self->stream_.expires_after(self->shared_->options.idle_timeout);
      http::async_read_some(self->stream_, self->buffer_, *self->parser_,
                            [self, handler](beast::error_code error, std::size_t) {
                              if (error == http::error::need_buffer) error = {};
                              auto n = self->raw_.size() - self->parser_->get().body().size;
                              if (error) return handler(body_error_of(error), 0, false);
                              if (n == 0 && !self->parser_->is_done())
                                return self->read_raw(handler);
                              handler(BodyError::none, n, self->parser_->is_done() && n == 0);
                            });
    });
  }

  /// Next decoded body bytes; an empty view at the end. Bounded by max_body_bytes after decoding.
  void next_decoded(BodyHandler handler) {
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
      if (decoded_total_ > shared_->options.max_body_bytes)
        return handler(BodyError::too_large, {});
      if (produced > 0)
        return handler(BodyError::none, std::string_view(decoded_.data(), produced));
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

  /// Sets up decoding from Content-Encoding; false (answered) when it is not supported.
  bool prepare_decoding() {
    if (content_encoding_.empty() || beast::iequals(content_encoding_, "identity")) return true;
    if (!beast::iequals(content_encoding_, "gzip") &&
        !beast::iequals(content_encoding_, "x-gzip")) {
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

  void answer_body_error(BodyError error) {
    if (child_) child_->kill_and_forget();
    if (headers_sent_ || error == BodyError::gone) return close();
    if (error == BodyError::too_large) return respond_text(413, "request body too large\n");
    respond_text(400, "bad request body\n");
  }

  // ---------------------------------------------------------------- streaming to git

  /// Streams the rest of the request body into git. The answer is completed only once the body
  /// has been read to its end (or refused), so a limit is answered even when git exits early.
  void pump_body() {
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

  void write_stdin(std::string_view data, std::function<void()> next) {
    net::async_write(child_->in, net::buffer(data.data(), data.size()),
                     [self = shared_from_this(), next](beast::error_code error, std::size_t) {
                       // git stopped reading (it answers already, or failed): its output and exit
                       // code tell the rest; the body is still read to its end.
                       if (error) self->stdin_broken_ = true;
                       next();
                     });
  }

  // ---------------------------------------------------------------- streaming from git

  void pump_output() {
    child_->out.async_read_some(
        net::buffer(out_), [self = shared_from_this()](beast::error_code error, std::size_t n) {
          if (n > 0)
            return self->send_chunk(std::string_view(self->out_.data(), n),
                                    [self] { self->pump_output(); });
          if (error) self->on_output_end();
        });
  }

  void send_headers(std::function<void()> next) {
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
    http::async_write_header(
        stream_, *serializer_,
        [self = shared_from_this(), next](beast::error_code error, std::size_t) {
          if (error) return self->abort();
          if (self->prefix_.empty()) return next();
          auto prefix = std::make_shared<std::string>(std::move(self->prefix_));
          self->prefix_.clear();
          self->write_chunk(*prefix, [prefix, next] { next(); });
        });
  }

  void write_chunk(std::string_view data, std::function<void()> next) {
    stream_.expires_after(shared_->options.idle_timeout);
    net::async_write(stream_, http::make_chunk(net::const_buffer(data.data(), data.size())),
                     [self = shared_from_this(), next](beast::error_code error, std::size_t) {
                       if (error) return self->abort();
                       next();
                     });
  }

  void send_chunk(std::string_view data, std::function<void()> next) {
    if (!headers_sent_)
      return send_headers(
          [self = shared_from_this(), data, next] { self->write_chunk(data, next); });
    write_chunk(data, next);
  }

  void finish_response() {
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

  void on_output_end() {
    wait_exit([self = shared_from_this()](int code) { self->on_exit(code); });
  }

  void on_exit(int code) {
    if (answered_) return;
    exit_code_ = code;
    if (pumping_body_ && !body_done_) return;  // complete() once the body has been read
    complete(code);
  }

  void complete(int code) {
    deadline_.cancel();
    if (answered_) return;
    if (code != 0) {
      log::info(component, target.service, " for ", remote_ip_, " exited with ", code, ": ",
                child_->stderr_text);
    }
    if (target.endpoint == GitEndpoint::receive_pack) after_push(code);
    if (!headers_sent_ && code != 0) return respond_text(500, "git failed\n");
    finish_response();
  }

  // ---------------------------------------------------------------- endpoints

  void start_info_refs() {
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
    if (!take_slot()) return respond_busy();
    // As `git http-backend`: the service line for v0, none for protocol v2 (§3.2).
    if (!v2) prefix_ = pkt_line("# service=" + target.service + "\n") + "0000";
    auto path = shared_->repositories.path_of(target.repository).string();
    if (!spawn({target.service.substr(4), "--stateless-rpc", "--advertise-refs", path}, true))
      return respond_text(500, "git failed\n");
    beast::error_code ignored;
    child_->in.close(ignored);
    arm_deadline();
    pump_output();
  }

  void start_rpc() {
    if (method_ != http::verb::post) return method_not_allowed();
    auto expected = "application/x-" + target.service + "-request";
    if (!beast::iequals(content_type_, expected))
      return respond_text(415, "unsupported content type\n");
    if (content_length_ && *content_length_ > shared_->options.max_body_bytes)
      return respond_text(413, "request body too large\n");
    result_type_ = "application/x-" + target.service + "-result";
    if (!prepare_decoding()) return;
    if (!take_slot()) return respond_busy();
    arm_deadline();
    if (target.endpoint == GitEndpoint::upload_pack) {
      auto path = shared_->repositories.path_of(target.repository).string();
      if (!spawn({"upload-pack", "--stateless-rpc", path}, true))
        return respond_text(500, "git failed\n");
      pump_body();
      pump_output();
      return;
    }
    wait_for_push_lock(0);
  }

  /// Pushes to one repository take turns: a push waits (up to ~5 s) for the one before it, or for
  /// the state applier, rather than failing; after that it gets 503.
  void wait_for_push_lock(int attempt) {
    if (lock_push()) return read_commands();
    constexpr int max_attempts = 100;
    if (attempt >= max_attempts) return respond_busy();
    auto timer = std::make_shared<net::steady_timer>(stream_.get_executor());
    timer->expires_after(std::chrono::milliseconds(50));
    timer->async_wait([self = shared_from_this(), timer, attempt](beast::error_code error) {
      if (error || self->answered_) return;
      self->wait_for_push_lock(attempt + 1);
    });
  }

  // ---------------------------------------------------------------- receive-pack

  bool lock_push() {
    auto key = shared_->repositories.path_of(target.repository).string();
    std::lock_guard lock{shared_->mutex};
    if (!shared_->pushing.insert(key).second) return false;
    push_lock_ = key;
    return true;
  }

  void unlock_push() {
    if (push_lock_.empty()) return;
    std::lock_guard lock{shared_->mutex};
    shared_->pushing.erase(push_lock_);
    push_lock_.clear();
  }

  void read_commands() {
    next_decoded([self = shared_from_this()](BodyError error, std::string_view data) {
      if (error != BodyError::none) return self->answer_body_error(error);
      self->head_.append(data);
      auto parsed = ::graspd::git::parse_command_list(self->head_);
      if (parsed.status == ParseStatus::invalid) {
        log::info(component, "push from ", self->remote_ip_, " refused: ", parsed.error);
        self->shared_->bump(self->shared_->counters.pushes_refused, &GitMetrics::refused);
        return self->respond_text(400, "invalid push: " + parsed.error + "\n");
      }
      if (parsed.status == ParseStatus::complete) return self->on_commands(std::move(parsed.list));
      if (data.empty() || self->head_.size() > max_command_list) {
        self->shared_->bump(self->shared_->counters.pushes_refused, &GitMetrics::refused);
        return self->respond_text(400, "invalid push: incomplete command list\n");
      }
      self->read_commands();
    });
  }

  void on_commands(::graspd::git::CommandList list) {
    commands_ = std::move(list);
    if (commands_.updates.empty()) {
      // The probe a client sends before a large push (§3.6): 200, empty result.
      return drain_then([self = shared_from_this()] { self->finish_response(); });
    }
    auto path = shared_->repositories.path_of(target.repository).string();
    if (!spawn({"--git-dir=" + path, "for-each-ref", "--format=%(objectname) %(refname)",
                "refs/heads", "refs/tags", "refs/nostr"},
               false))
      return respond_text(500, "git failed\n");
    beast::error_code ignored;
    child_->in.close(ignored);
    read_refs(path);
  }

  void read_refs(const std::string& path) {
    child_->out.async_read_some(net::buffer(out_), [self = shared_from_this(), path](
                                                       beast::error_code error, std::size_t n) {
      self->refs_text_.append(self->out_.data(), n);
      if (self->refs_text_.size() > max_ref_listing) {
        self->child_->kill_and_forget();
        return self->respond_text(500, "too many refs\n");
      }
      if (!error) return self->read_refs(path);
      self->wait_exit([self](int code) { self->on_refs(code); });
    });
  }

  void on_refs(int code) {
    if (code != 0) {
      log::warn(component, "for-each-ref failed (", code, "): ", child_->stderr_text);
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
    std::vector<std::string> pr_ids;
    for (const auto& u : commands_.updates)
      if (u.ref.rfind("refs/nostr/", 0) == 0) pr_ids.push_back(u.ref.substr(11));
    ::graspd::git::PushAuthority authority;
    if (shared_->hooks.authority)
      authority =
          shared_->hooks.authority(target.repository.owner, target.repository.identifier, pr_ids);
    decision_ = ::graspd::git::authorise_push(commands_.updates, current, authority);
    state_ = authority.state;
    if (!decision_.accepted) return refuse_push();
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

  void refuse_push() {
    shared_->bump(shared_->counters.pushes_refused, &GitMetrics::refused);
    log::info(component, "push to ", nostr::encode_npub(target.repository.owner), "/",
              target.repository.identifier, " from ", remote_ip_, " refused: ", decision_.reason);
    bool side_band = commands_.capabilities.count("side-band-64k") > 0;
    auto report = std::make_shared<std::string>(refusal_report(decision_, side_band));
    // Read the pack the client is sending (bounded as any body), then answer: clients read the
    // answer only once their request is sent.
    drain_then([self = shared_from_this(), report] {
      self->send_chunk(*report, [self, report] { self->finish_response(); });
    });
  }

  void drain_then(std::function<void()> next) {
    next_decoded([self = shared_from_this(), next](BodyError error, std::string_view data) {
      if (error != BodyError::none) return self->answer_body_error(error);
      if (data.empty()) return next();
      self->drain_then(next);
    });
  }

  void after_push(int code) {
    auto repository = target.repository;
    unlock_push();
    if (code != 0) return;
    shared_->bump(shared_->counters.pushes_accepted, &GitMetrics::accepted);
    if (state_) {
      if (auto branch = ::graspd::git::head_branch(*state_))
        shared_->repositories.set_head(repository, *branch);
    }
    if (shared_->hooks.pushed) shared_->hooks.pushed(repository);
  }

  std::shared_ptr<GitHttp::Shared> shared_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::string remote_ip_;
  net::steady_timer deadline_;
  std::optional<http::request_parser<http::buffer_body>> parser_;
  http::verb method_ = http::verb::unknown;
  unsigned version_ = 11;
  std::string target_;
  std::string content_type_;
  std::string content_encoding_;
  std::string git_protocol_;
  std::string accept_;
  bool expect_continue_ = false;
  boost::optional<std::uint64_t> content_length_;
  bool slot_ = false;
  std::string push_lock_;
  std::unique_ptr<Child> child_;
  std::array<char, io_chunk> raw_{};
  std::array<char, io_chunk> out_{};
  std::vector<char> decoded_ = std::vector<char>(io_chunk);
  struct ZDeleter {
    void operator()(z_stream* z) const {
      ::inflateEnd(z);
      delete z;
    }
  };
  std::unique_ptr<z_stream, ZDeleter> inflater_;
  bool inflate_ended_ = false;
  std::uint64_t decoded_total_ = 0;
  std::string result_type_;
  std::string prefix_;
  bool headers_sent_ = false;
  bool answered_ = false;
  bool pumping_body_ = false;
  bool body_done_ = false;
  bool stdin_broken_ = false;
  std::optional<int> exit_code_;  ///< an answer (or the close) is under way: nothing else is sent
  std::unique_ptr<http::response<http::empty_body>> response_;
  std::unique_ptr<http::response_serializer<http::empty_body>> serializer_;
  std::string head_;
  std::string refs_text_;
  ::graspd::git::CommandList commands_;
  PushDecision decision_;
  std::optional<::graspd::git::StateRefs> state_;
  std::size_t discarded_ = 0;
};

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
