// The sync transport over wss:// end to end: graspd dials a TLS
// relay peer (tests/interop/tls_peer.mjs under node) whose certificate is
// issued by a throwaway CA made with the openssl CLI at test time, trusted
// through SSL_CERT_FILE, and verified against the host name "localhost".
// A peer presenting a certificate graspd cannot verify (issued by the trusted
// CA for another host name, or issued by a CA graspd does not trust) yields
// nothing and a certificate error in /api/sync.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "tests/integration/sync_test_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace graspd::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

/// Certificates made by the openssl CLI (EC P-256): a CA, a server
/// certificate it signed for localhost and 127.0.0.1, and a "wrong" one it
/// signed for other.example only (so only hostname verification rejects it).
struct TestCertificates {
  std::string ca_pem, server_key, server_pem, wrong_key, wrong_pem;
};

/// Runs a shell command in `dir`, its output appended to openssl.log there.
bool run_in(const TempDir& dir, const std::string& command) {
  auto line = "cd '" + dir.path().string() + "' && " + command + " >>openssl.log 2>&1";
  return std::system(line.c_str()) == 0;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::optional<TestCertificates> make_certificates(const TempDir& dir) {
  const std::string new_key = "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
  const std::string sign = "openssl x509 -req -CA ca.pem -CAkey ca.key -days 2";
  std::ofstream(dir.file("san.ext")) << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
  std::ofstream(dir.file("other.ext")) << "subjectAltName=DNS:other.example\n";
  const std::vector<std::string> steps = {
      new_key + " -x509 -days 2 -keyout ca.key -out ca.pem -subj /CN=graspd-test-ca",
      new_key + " -keyout server.key -out server.csr -subj /CN=localhost",
      sign + " -set_serial 2 -in server.csr -out server.pem -extfile san.ext",
      new_key + " -keyout wrong.key -out wrong.csr -subj /CN=other.example",
      sign + " -set_serial 3 -in wrong.csr -out wrong.pem -extfile other.ext",
  };
  for (const auto& step : steps) {
    if (run_in(dir, step)) continue;
    ADD_FAILURE() << "failed: " << step << "\n" << read_text(dir.file("openssl.log"));
    return std::nullopt;
  }
  return TestCertificates{dir.file("ca.pem"), dir.file("server.key"), dir.file("server.pem"),
                          dir.file("wrong.key"), dir.file("wrong.pem")};
}

/// The TLS relay peer, serving `events` (written to a JSON file it reads at start).
class TlsPeer {
 public:
  TlsPeer(const TempDir& dir, const std::string& key, const std::string& cert,
          const std::vector<nostr::Event>& events) {
    auto events_path = dir.file("events.json");
    {
      std::ofstream out(events_path);
      out << "[";
      for (std::size_t i = 0; i < events.size(); ++i)
        out << (i ? "," : "") << nostr::serialize_event(events[i]);
      out << "]";
    }
    process_.emplace("tls_peer.mjs", std::vector<std::string>{key, cert, events_path, "0"});
    port_ = process_->port();
  }
  TlsPeer(const TlsPeer&) = delete;
  TlsPeer& operator=(const TlsPeer&) = delete;

  std::uint16_t port() const { return port_; }
  /// By name, so graspd sends SNI (the peer requires it) and verifies the
  /// certificate against "localhost".
  std::string url() const { return "wss://localhost:" + std::to_string(port_); }

 private:
  std::optional<NodeScript> process_;
  std::uint16_t port_ = 0;
};

/// A string field of the /api/sync entry of `relay` ("" when absent or null).
std::string relay_text(std::uint16_t port, const std::string& relay, const char* key) {
  rapidjson::Document doc;
  auto body = sync_status(port);
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("relays")) return {};
  for (const auto& entry : doc["relays"].GetArray())
    if (entry["url"].GetString() == relay && entry.HasMember(key) && entry[key].IsString())
      return entry[key].GetString();
  return {};
}

constexpr const char* repo_name = "tls-demo";
constexpr std::uint8_t owner_key = 11;

/// The repository's "30617:<owner>:<d>" address (independent of the tags,
/// so the peer's issues can be made before its port is known).
std::string repo_address() {
  return nostr::address_of(make_event(30617, "", {{"d", repo_name}}, 0, owner_key));
}

std::vector<nostr::Event> issues_of_repo(int count) {
  std::vector<nostr::Event> issues;
  auto t = now_seconds() - 1000;
  for (int i = 0; i < count; ++i) issues.push_back(issue_for(repo_address(), i, t + 10 + i));
  return issues;
}

/// The announcement listing graspd itself (ws://) and the TLS peer (wss://).
nostr::Event announcement_for(const std::string& node_url, const std::string& peer_url) {
  auto node_host = node_url.substr(std::string("ws://").size());
  auto peer_host = peer_url.substr(std::string("wss://").size());
  return make_event(30617, "repository over tls",
                    {{"d", repo_name},
                     {"clone", "http://" + node_host + "/owner/tls-demo.git",
                      "https://" + peer_host + "/owner/tls-demo.git"},
                     {"relays", node_url, peer_url}},
                    now_seconds() - 2000, owner_key);
}

void publish(std::uint16_t port, const nostr::Event& ev) {
  auto client = TestClient::connect(port);
  ASSERT_TRUE(client);
  auto ok = client->publish(ev);
  ASSERT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no OK");
}

std::vector<std::pair<std::string, std::string>> tls_sync_env(const std::string& trusted_file) {
  return {{"SSL_CERT_FILE", trusted_file},
          {"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", "true"},
          {"NGIT_SYNC_BATCH_WINDOW_MS", "100"},
          {"NGIT_SYNC_BASE_BACKOFF_SECS", "1"},
          {"NGIT_SYNC_MAX_BACKOFF_SECS", "2"}};
}

class SyncTls : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    auto made = make_certificates(dir_);
    ASSERT_TRUE(made);
    certs_ = *made;
  }

  /// Starts the peer serving `issues` with `key`/`cert`, then graspd trusting
  /// `trusted_file`, and announces the repository to graspd.
  void start(const std::string& key, const std::string& cert, const std::string& trusted_file) {
    peer_ = std::make_unique<TlsPeer>(dir_, key, cert, issues_);
    ASSERT_NE(peer_->port(), 0) << "tls peer did not start (node + tests/interop/node_modules?)";
    node_ = std::make_unique<GraspdProcess>(GraspdOptions{tls_sync_env(trusted_file), {}});
    ASSERT_TRUE(node_->start()) << node_->stderr_text();
    publish(node_->port(), announcement_for(node_->relay_url(), peer_->url()));
  }

  /// graspd dials the peer, fails on the certificate, retries after the
  /// backoff and fails again: nothing arrives and the reason is reported.
  void expect_refused_for_certificate() {
    const auto relay = peer_->url();
    ASSERT_TRUE(wait_until(
        [&] { return relay_figure(node_->port(), relay, "connection_attempts") >= 2; }, 10s))
        << sync_status(node_->port()) << node_->stderr_text();
    auto error = relay_text(node_->port(), relay, "last_error");
    EXPECT_NE(error.find("certificate verify failed"), std::string::npos)
        << error << "\n"
        << sync_status(node_->port());
    EXPECT_NE(relay_text(node_->port(), relay, "status"), "connected");
    std::cout << "[ graspd  ] last_error: " << error << "\n";
    EXPECT_EQ(stored_count(node_->port(), issues_), 0u);
    EXPECT_EQ(node_->stop(), 0) << node_->stderr_text();
  }

  TempDir dir_{"graspd-tls"};
  TestCertificates certs_;
  std::vector<nostr::Event> issues_ = issues_of_repo(4);
  std::unique_ptr<TlsPeer> peer_;
  std::unique_ptr<GraspdProcess> node_;
};

TEST_F(SyncTls, SyncsIssuesFromAWssPeerWhoseCertificateVerifies) {
  ASSERT_NO_FATAL_FAILURE(start(certs_.server_key, certs_.server_pem, certs_.ca_pem));
  const auto relay = peer_->url();
  ASSERT_TRUE(
      wait_until([&] { return stored_count(node_->port(), issues_) == issues_.size(); }, 10s))
      << stored_count(node_->port(), issues_) << " of " << issues_.size() << "\n"
      << sync_status(node_->port()) << node_->stderr_text();
  EXPECT_TRUE(
      wait_until([&] { return relay_text(node_->port(), relay, "status") == "connected"; }, 5s))
      << sync_status(node_->port());
  EXPECT_EQ(relay_text(node_->port(), relay, "last_error"), "") << sync_status(node_->port());
  // Connections report their traffic figures every second.
  EXPECT_TRUE(wait_until(
      [&] {
        return relay_figure(node_->port(), relay, "events_received") >=
               static_cast<std::int64_t>(issues_.size());
      },
      8s))
      << sync_status(node_->port());
  EXPECT_EQ(node_->stop(), 0) << node_->stderr_text();
}

TEST_F(SyncTls, RefusesAPeerWhoseCertificateNamesAnotherHost) {
  ASSERT_NO_FATAL_FAILURE(start(certs_.wrong_key, certs_.wrong_pem, certs_.ca_pem));
  expect_refused_for_certificate();
}

TEST_F(SyncTls, RefusesAPeerWhoseCaIsNotTrusted) {
  // The right certificate, but graspd trusts only the system store.
  ASSERT_NO_FATAL_FAILURE(
      start(certs_.server_key, certs_.server_pem, "/etc/ssl/certs/ca-certificates.crt"));
  expect_refused_for_certificate();
}

}  // namespace
}  // namespace graspd::test
