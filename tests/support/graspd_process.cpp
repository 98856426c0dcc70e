#include "tests/support/graspd_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/http_client.hpp"

extern char** environ;

namespace graspd::test {

namespace {

using Clock = std::chrono::steady_clock;

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

/// fork + exec `launcher binary args` with the inherited environment plus `env`; stdout and
/// stderr go to the given files (appended). Returns the child pid.
pid_t spawn_process(const std::vector<std::string>& args,
                    const std::vector<std::pair<std::string, std::string>>& env,
                    const std::string& stdout_path, const std::string& stderr_path,
                    const std::vector<std::string>& launcher = {}) {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry; ++entry) {
    std::string text = *entry;
    auto name = text.substr(0, text.find('='));
    bool overridden = false;
    for (const auto& [key, value] : env) overridden |= key == name;
    if (!overridden) environment.push_back(text);
  }
  for (const auto& [key, value] : env) environment.push_back(key + "=" + value);

  std::vector<std::string> args_copy = launcher;
  args_copy.push_back(GraspdProcess::binary());
  args_copy.insert(args_copy.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : args_copy) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid == 0) {
    int out = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out >= 0) ::dup2(out, STDOUT_FILENO);
    if (err >= 0) ::dup2(err, STDERR_FILENO);
    // The test runner may block signals; graspd expects the default dispositions.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(argv[0], argv.data(), envp.data());
    std::_Exit(127);
  }
  return pid;
}

/// Waits for `pid` until the deadline; the exit code (or -1 for death by signal) when it exited.
std::optional<int> wait_pid(pid_t pid, std::chrono::milliseconds deadline) {
  auto until = Clock::now() + deadline;
  while (true) {
    int status = 0;
    auto result = ::waitpid(pid, &status, WNOHANG);
    if (result == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (result < 0) return -1;
    if (Clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::optional<std::uint16_t> listening_port(const std::string& log) {
  static const std::regex pattern{R"(listening on \S*:(\d+))"};
  std::smatch match;
  if (!std::regex_search(log, match, pattern)) return std::nullopt;
  return static_cast<std::uint16_t>(std::stoi(match[1].str()));
}

}  // namespace

std::string GraspdProcess::binary() {
  const char* path = std::getenv("GRASPD_BINARY");
  if (!path || !*path) throw std::runtime_error("GRASPD_BINARY is not set");
  return path;
}

std::uint16_t free_port() {
  // Below Linux's ephemeral range (32768-60999): a port chosen there can be taken, before the
  // test's server binds it, by any process binding port 0 or opening an outgoing connection —
  // which is how a strfry relay once failed to start beside a parallel suite. Here only another
  // test's free_port() can pick the same one, at a random place in 12,000.
  static std::mt19937 random(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  std::uniform_int_distribution<int> below_ephemeral(20000, 32767);
  for (;;) {
    const auto port = static_cast<std::uint16_t>(below_ephemeral(random));
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (bound) return port;
  }
}

GraspdProcess::GraspdProcess(GraspdOptions options)
    : options_(std::move(options)), work_dir_(temp_.path().string()) {
  port_ = options_.port;
  data_dir_ = work_dir_ + "/relay";
  stderr_path_ = work_dir_ + "/stderr.log";
}

GraspdProcess::~GraspdProcess() {
  if (running()) kill();
}

bool GraspdProcess::start(std::chrono::milliseconds deadline) {
  return launch(deadline);
}

bool GraspdProcess::restart(std::chrono::milliseconds deadline) {
  if (running()) stop();
  return launch(deadline);
}

bool GraspdProcess::launch(std::chrono::milliseconds deadline) {
  if (running()) return false;
  std::vector<std::string> args{"--bind-address", "127.0.0.1:" + std::to_string(port_),
                                "--relay-data-path", data_dir_};
  args.insert(args.end(), options_.args.begin(), options_.args.end());
  // Only this run's log lines count when looking for the readiness line.
  auto log_offset = read_file(stderr_path_).size();
  // Git repositories go to the temporary directory too, unless the test chose a place.
  auto env = options_.env;
  bool git_path_set = false, purgatory_set = false, key_file_set = false, sweep_set = false;
  for (const auto& [key, value] : env) {
    git_path_set |= key == "NGIT_GIT_DATA_PATH";
    sweep_set |= key == "NGIT_REPLICATION_SWEEP_SECS";
    purgatory_set |= key == "NGIT_PURGATORY_ENABLED";
    key_file_set |= key == "NGIT_RELAY_OWNER_NSEC_FILE";
  }
  if (!git_path_set) env.emplace_back("NGIT_GIT_DATA_PATH", work_dir_ + "/git");
  // The relay key is generated into the temporary directory too (not the test's working one).
  if (!key_file_set)
    env.emplace_back("NGIT_RELAY_OWNER_NSEC_FILE", work_dir_ + "/relay-owner.nsec");
  if (!purgatory_set)
    env.emplace_back("NGIT_PURGATORY_ENABLED", options_.purgatory ? "true" : "false");
  // No background replication checks: they would dial the relays a test's announcements name
  // (and count among a fault peer's connections) at a moment no test chose.
  if (!sweep_set) env.emplace_back("NGIT_REPLICATION_SWEEP_SECS", "0");
  pid_ = spawn_process(args, env, work_dir_ + "/stdout.log", stderr_path_, options_.launcher);
  if (pid_ <= 0) return false;

  auto until = Clock::now() + deadline;
  while (Clock::now() < until) {
    if (auto exited = wait_pid(pid_, std::chrono::milliseconds(0))) {
      pid_ = -1;
      return false;
    }
    auto log = read_file(stderr_path_);
    if (auto port = listening_port(log.substr(std::min(log_offset, log.size())))) {
      port_ = *port;
      if (http_get(port_, "/healthz").status == 200) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int GraspdProcess::stop(std::chrono::milliseconds deadline) {
  if (!running()) return -1;
  auto started = Clock::now();
  ::kill(pid_, SIGTERM);
  auto code = wait_exit(deadline);
  last_stop_duration_ =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  if (!code) {
    kill();
    return -1;
  }
  return *code;
}

void GraspdProcess::kill() {
  if (!running()) return;
  ::kill(pid_, SIGKILL);
  wait_exit(std::chrono::seconds(10));
  pid_ = -1;
}

std::optional<int> GraspdProcess::wait_exit(std::chrono::milliseconds deadline) {
  auto code = wait_pid(pid_, deadline);
  if (code) pid_ = -1;
  return code;
}

namespace {
std::size_t status_kib(pid_t pid, const std::string& field) {
  if (pid <= 0) return 0;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1));
  return 0;
}
}  // namespace

std::size_t GraspdProcess::resident_kib() const {
  return status_kib(pid_, "VmRSS");
}

std::size_t GraspdProcess::peak_resident_kib() const {
  return status_kib(pid_, "VmHWM");
}

std::string GraspdProcess::relay_url() const {
  return "ws://127.0.0.1:" + std::to_string(port_);
}

std::string GraspdProcess::stderr_text() const {
  return read_file(stderr_path_);
}

GraspdExit GraspdProcess::run_to_exit(const std::vector<std::string>& args,
                                      const std::vector<std::pair<std::string, std::string>>& env,
                                      std::chrono::milliseconds deadline) {
  TempDir dir("graspd-test");
  GraspdExit result;
  pid_t pid = spawn_process(args, env, dir.file("stdout.log"), dir.file("stderr.log"));
  auto code = wait_pid(pid, deadline);
  if (!code) {
    ::kill(pid, SIGKILL);
    wait_pid(pid, std::chrono::seconds(10));
  }
  result.exit_code = code.value_or(-1);
  result.stdout_text = read_file(dir.file("stdout.log"));
  result.stderr_text = read_file(dir.file("stderr.log"));
  return result;
}

}  // namespace graspd::test
