#include "messages/errors.hpp"

namespace graspd {

std::string to_string(config_errc code) {
  switch (code) {
    case config_errc::unexpected_argument:
      return "unexpected_argument";
    case config_errc::unknown_option:
      return "unknown_option";
    case config_errc::missing_value:
      return "missing_value";
    case config_errc::unreadable_file:
      return "unreadable_file";
    case config_errc::invalid_line:
      return "invalid_line";
    case config_errc::invalid_value:
      return "invalid_value";
    case config_errc::inconsistent_options:
      return "inconsistent_options";
  }
  return "config_errc(" + std::to_string(static_cast<int>(code)) + ")";
}

std::string to_string(git_errc code) {
  switch (code) {
    case git_errc::invalid_identifier:
      return "invalid_identifier";
    case git_errc::repository_not_created:
      return "repository_not_created";
    case git_errc::process_not_started:
      return "process_not_started";
  }
  return "git_errc(" + std::to_string(static_cast<int>(code)) + ")";
}

std::string to_string(net_errc code) {
  switch (code) {
    case net_errc::connect_failed:
      return "connect_failed";
    case net_errc::timed_out:
      return "timed_out";
  }
  return "net_errc(" + std::to_string(static_cast<int>(code)) + ")";
}

namespace {

template <class Code>
caf::error error_of(Code code, caf::atom_value category, std::string why) {
  if (why.empty()) return {static_cast<std::uint8_t>(code), category};
  return {static_cast<std::uint8_t>(code), category, caf::make_message(std::move(why))};
}

}  // namespace

caf::error make_error(config_errc code, std::string why) {
  return error_of(code, config_error_category, std::move(why));
}

caf::error make_error(git_errc code, std::string why) {
  return error_of(code, git_error_category, std::move(why));
}

caf::error make_error(net_errc code, std::string why) {
  return error_of(code, net_error_category, std::move(why));
}

bool is(const caf::error& error, git_errc code) {
  return error.category() == git_error_category && error.code() == static_cast<std::uint8_t>(code);
}

namespace {

/// "<category>: <code> (<why>)", as CAF renders its own categories. (CAF 0.17's templated
/// add_error_category does not compile against its own renderer type, so the renderer is ours.)
template <class Code>
caf::actor_system_config::error_renderer renderer_of() {
  return [](std::uint8_t code, caf::atom_value category, const caf::message& context) {
    auto text = to_string(category) + ": " + to_string(static_cast<Code>(code));
    if (!context.empty()) text += " " + to_string(context);
    return text;
  };
}

}  // namespace

void add_error_categories(caf::actor_system_config& config) {
  config.add_error_category(config_error_category, renderer_of<config_errc>());
  config.add_error_category(git_error_category, renderer_of<git_errc>());
  config.add_error_category(net_error_category, renderer_of<net_errc>());
}

}  // namespace graspd
