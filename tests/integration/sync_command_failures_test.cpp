// `graspd sync` against relays that cannot reconcile (runtime/boot/sync_session.*): an in-process
// WebSocket peer answers NEG-OPEN with one scripted frame, or closes, or says nothing; the real
// binary must exit 1 naming the cause each time (strfry sync's rules, docs/spec/nip77-negentropy.md
// §8).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/graspd_process.hpp"
#include "tests/support/loopback_ws_server.hpp"

namespace graspd::test {
namespace {

using namespace std::chrono_literals;

/// A relay that answers NEG-OPEN with one scripted frame, or closes the connection when the
/// frame is empty, or says nothing at all when `silent`.
class ScriptedPeer {
 public:
  ScriptedPeer(std::string answer, bool silent) {
    server_.start({}, [answer, silent](const std::string&) {
      return std::make_unique<Handler>(answer, silent);
    });
  }
  std::string url() const { return "ws://127.0.0.1:" + std::to_string(server_.port()); }

 private:
  struct Handler : runtime::WsSessionHandler {
    Handler(std::string answer, bool silent) : answer(std::move(answer)), silent(silent) {}
    void on_open(std::shared_ptr<runtime::WsConnection> c) override { connection = c; }
    void on_text(std::string&& text) override {
      connection->consumed(text.size());
      if (silent || !text.starts_with("[\"NEG-OPEN\"")) return;
      if (answer.empty()) return connection->close({});
      connection->send(std::make_shared<const std::string>(answer));
    }
    void on_binary() override {}
    void on_oversize() override {}
    void on_close() override {}
    std::string answer;
    bool silent;
    std::shared_ptr<runtime::WsConnection> connection;
  };
  mutable test::LoopbackWsServer server_;
};

TEST(SyncCommandFailures, APeerThatCannotReconcileEndsTheRunWithItsCause) {
  TempDir data("graspd-sync");
  struct Case {
    std::string answer;
    bool silent;
    std::string cause;
  };
  const std::vector<Case> cases{
      {R"(["NOTICE","ERROR: bad msg: negentropy disabled"])", false,
       "failed: the relay answered NOTICE \"ERROR: bad msg: negentropy disabled\""},
      {R"(["NEG-MSG","N","zz"])", false, "failed: the relay sent an unusable NEG-MSG"},
      {R"(["NEG-MSG","N","62aabb"])", false, "failed: the relay sent an unusable NEG-MSG"},
      {"", false, "failed: disconnected"},
      {"", true, "failed: timeout: nothing from the relay for 1 s"},
  };
  for (const auto& c : cases) {
    ScriptedPeer peer(c.answer, c.silent);
    auto run = GraspdProcess::run_to_exit(
        {"sync", peer.url(), "--timeout", "1", "--data", data.path().string()}, {}, 30s);
    EXPECT_EQ(run.exit_code, 1) << c.answer << "\n" << run.stderr_text;
    EXPECT_NE(run.stderr_text.find(c.cause), std::string::npos) << run.stderr_text;
  }
}

}  // namespace
}  // namespace graspd::test
