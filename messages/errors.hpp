// The error vocabulary. Each subsystem has one code enum; a fallible call returns
// Result<T, Failure<code>> (messages/result.hpp), and an actor that refuses a request replies with
// the same code as a caf::error of the subsystem's category (make_error below), which the
// requester's error handler receives and the actor system renders as "<category>: <code> (<why>)".
// Client-facing refusals keep NIP-01's machine-readable prefixes (`invalid:`, `blocked:` ...)
// and git's own `[remote rejected]`; these codes are what the daemon says to itself and to the
// operator.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>

#include <cstdint>
#include <string>

#include "messages/result.hpp"

namespace graspd {

/// Loading the configuration (runtime/config): every message names the option or the file.
enum class config_errc : std::uint8_t {
  unexpected_argument = 1,  ///< a command-line word that is no --option
  unknown_option,           ///< an --option, or a config-file key, the table does not have
  missing_value,            ///< an --option given last, without its value
  unreadable_file,          ///< --config / GRASPD_CONFIG names no readable file
  invalid_line,             ///< a config-file line that is not `key = value`
  invalid_value,            ///< a value its option's parser refuses
  inconsistent_options,     ///< values that are each valid but contradict one another
};

/// Git hosting (runtime/git, actors/git).
enum class git_errc : std::uint8_t {
  invalid_identifier =
      1,  ///< a repository name git hosting never serves (docs/spec/git-hosting.md)
  repository_not_created,  ///< the bare repository could not be laid out on disk
  process_not_started,     ///< a git child process could not be spawned
};

/// Transport (runtime/net).
enum class net_errc : std::uint8_t {
  connect_failed = 1,  ///< no WebSocket connection: resolve, TCP, TLS or the upgrade failed
  timed_out,           ///< the connection did not complete within its deadline
};

using ConfigFailure = Failure<config_errc>;
using GitFailure = Failure<git_errc>;
using NetFailure = Failure<net_errc>;

std::string to_string(config_errc code);
std::string to_string(git_errc code);
std::string to_string(net_errc code);

/// The caf::error categories of the codes above.
inline constexpr caf::atom_value config_error_category = caf::atom("config");
inline constexpr caf::atom_value git_error_category = caf::atom("git");
inline constexpr caf::atom_value net_error_category = caf::atom("net");

/// A reply's error carrying `code` and the sentence that explains it.
caf::error make_error(config_errc code, std::string why = {});
caf::error make_error(git_errc code, std::string why = {});
caf::error make_error(net_errc code, std::string why = {});
template <class Code>
caf::error make_error(const Failure<Code>& failure) {
  return make_error(failure.code, failure.message);
}

/// Whether `error` carries `code` (of its category).
bool is(const caf::error& error, git_errc code);

/// Lets `config`'s actor system render these categories by name.
void add_error_categories(caf::actor_system_config& config);

}  // namespace graspd
