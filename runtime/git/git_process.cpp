#include "runtime/git/git_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>
#include <thread>

namespace graspd::runtime::git {

namespace net = boost::asio;

void Child::kill_and_forget() {
  if (pid <= 0 || reaped) return;
  ::kill(-pid, SIGKILL);
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) == pid) {
    reaped = true;
    return;
  }
  std::thread([pid = pid] {
    int ignored = 0;
    ::waitpid(pid, &ignored, 0);
  }).detach();
  reaped = true;
}

namespace {

/// Set right after the spawn, before git has read its request, so the pack-objects an upload-pack
/// starts inherits it. Best effort: a process left at the daemon's priority still works.
void lower_priority(pid_t pid, int nice_increment) {
  errno = 0;
  int own = ::getpriority(PRIO_PROCESS, 0);
  if (own == -1 && errno != 0) own = 0;
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(pid), std::min(19, own + nice_increment));
}

}  // namespace

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

Result<std::unique_ptr<Child>, GitFailure> spawn_child(
    const net::any_io_executor& executor, const std::vector<std::string>& argv_text,
    const std::vector<std::string>& env_text, const std::string& cwd, std::uint64_t max_file_bytes,
    std::uint64_t max_memory_bytes, int nice_increment) {
  auto fail = [](const char* what) {
    return GitFailure{git_errc::process_not_started,
                      std::string(what) + ": " + std::strerror(errno)};
  };
  if (argv_text.empty()) {
    errno = EINVAL;
    return fail("spawn");
  }
  std::vector<char*> argv, envp;
  for (const auto& a : argv_text) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env_text) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return fail("pipe");
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]);
    return fail("pipe");
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
    return fail("pipe");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // The daemon blocks SIGINT/SIGTERM and ignores SIGPIPE in every thread; git gets defaults.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGXFSZ);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setpgroup(&attributes, 0);  // its own group: a kill reaches its children too
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(in[1]), ::close(out[0]), ::close(err[0]);
    errno = rc;
    return fail("posix_spawn");
  }
  if (max_file_bytes > 0) {
    // Set right after the spawn: the process negotiates before it writes anything large.
    struct rlimit limit {
      max_file_bytes, max_file_bytes
    };
    ::prlimit(pid, RLIMIT_FSIZE, &limit, nullptr);
  }
  if (max_memory_bytes > 0) {
    struct rlimit limit {
      max_memory_bytes, max_memory_bytes
    };
    ::prlimit(pid, RLIMIT_AS, &limit, nullptr);
  }
  if (nice_increment > 0) lower_priority(pid, nice_increment);
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  auto child = std::make_unique<Child>(executor);
  child->pid = pid;
  child->in.assign(in[1]);
  child->out.assign(out[0]);
  child->err.assign(err[0]);
  if (pidfd >= 0) child->exit.assign(pidfd);
  return child;
}

namespace {

constexpr std::size_t max_stderr = 2048;

struct Collector : std::enable_shared_from_this<Collector> {
  Collector(const net::any_io_executor& executor) : timer(executor) {}

  void start(std::string input_text, std::chrono::seconds timeout) {
    input = std::move(input_text);
    timer.expires_after(timeout);
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
      if (error || self->finished) return;
      self->result.timed_out = true;
      self->child->kill_and_forget();
    });
    net::async_write(child->in, net::buffer(input),
                     [self = shared_from_this()](const boost::system::error_code&, std::size_t) {
                       boost::system::error_code ignored;
                       self->child->in.close(ignored);
                     });
    read_out();
    read_err();
  }

  void read_out() {
    child->out.async_read_some(
        net::buffer(buffer),
        [self = shared_from_this()](const boost::system::error_code& error, std::size_t n) {
          self->result.out.append(self->buffer.data(), n);
          if (self->result.out.size() > self->max_output) {
            self->child->kill_and_forget();
            return self->finish(-1);
          }
          if (!error) return self->read_out();
          self->wait_exit();
        });
  }

  void read_err() {
    child->err.async_read_some(
        net::buffer(child->err_buffer),
        [self = shared_from_this()](const boost::system::error_code& error, std::size_t n) {
          auto& text = self->result.err;
          text.append(self->child->err_buffer.data(), n);
          if (text.size() > max_stderr) text.erase(0, text.size() - max_stderr);
          if (!error) self->read_err();
        });
  }

  void wait_exit() {
    auto reap = [self = shared_from_this()](const boost::system::error_code&) {
      if (self->finished) return;
      if (self->child->reaped) return self->finish(-1);  // killed at the timeout
      int status = 0;
      pid_t got = ::waitpid(self->child->pid, &status, WNOHANG);
      if (got == 0) {
        auto again = std::make_shared<net::steady_timer>(self->timer.get_executor());
        again->expires_after(std::chrono::milliseconds(5));
        again->async_wait([self, again](const boost::system::error_code&) { self->wait_exit(); });
        return;
      }
      self->child->reaped = true;
      self->finish(got == self->child->pid ? exit_code_of(status) : -1);
    };
    if (child->exit.is_open())
      child->exit.async_wait(net::posix::descriptor_base::wait_read, reap);
    else
      net::post(timer.get_executor(), [reap] { reap({}); });
  }

  void finish(int code) {
    if (finished) return;
    finished = true;
    timer.cancel();
    result.exit_code = result.timed_out ? -1 : code;
    auto callback = std::move(done);
    auto collected = std::move(result);
    // Close the pipes now; the child object goes with the last handler.
    boost::system::error_code ignored;
    child->out.close(ignored);
    child->err.close(ignored);
    child->exit.close(ignored);
    callback(std::move(collected));
  }

  std::unique_ptr<Child> child;
  net::steady_timer timer;
  std::string input;
  std::array<char, 16 * 1024> buffer{};
  std::size_t max_output = 0;
  bool finished = false;
  Collected result;
  std::function<void(Collected)> done;
};

}  // namespace

void run_collect(const net::any_io_executor& executor, std::vector<std::string> argv,
                 std::vector<std::string> env, std::string cwd, std::string input,
                 std::chrono::seconds timeout, std::size_t max_output, std::uint64_t max_file_bytes,
                 std::function<void(Collected)> done, std::uint64_t max_memory_bytes) {
  auto spawned = spawn_child(executor, argv, env, cwd, max_file_bytes, max_memory_bytes);
  if (!spawned) {
    Collected failed;
    failed.err = spawned.error().message;
    net::post(executor, [done = std::move(done), failed = std::move(failed)]() mutable {
      done(std::move(failed));
    });
    return;
  }
  auto collector = std::make_shared<Collector>(executor);
  collector->child = std::move(*spawned);
  collector->max_output = max_output;
  collector->done = std::move(done);
  collector->start(std::move(input), timeout);
}

}  // namespace graspd::runtime::git
