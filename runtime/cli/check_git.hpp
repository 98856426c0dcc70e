// `graspd check-git [--repair] [--config FILE] [--option VALUE]...`: git data integrity. Every
// repository under NGIT_GIT_DATA_PATH (`<npub>/<identifier>.git`, hosted or archived) is compared
// with its owner's newest authorising state event (kind 30618, the maintainer closure's, held
// events included: what the daemon's state applier aims at). Missing = a branch or tag of the
// state that is absent here, at another commit, or whose object is not in the repository; extra =
// a branch or tag the state does not name; HEAD = HEAD names another branch than the state's.
// With --repair the missing objects are fetched by id from the repository's clone URLs by the
// daemon's own fetcher (runtime/git/git_fetcher.*: same URL guard, timeouts and size limit), one
// repository at a time within a deadline, then branches and tags are set in one `update-ref
// --stdin` transaction checked against the values read (a concurrent push or applier wins; the
// repository is then reported as still differing). Safe to run beside the daemon (see
// docs/operations.md, "check-git").
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "runtime/config/config.hpp"

namespace graspd::runtime {

/// Runs the check on `args` (after "check-git"). Exit codes: 0 = no differences (or all repaired),
/// 1 = differences remain, 2 = usage or configuration error (the message names the option).
int run_check_git(const std::vector<std::string>& args, const EnvironmentLookup& environment,
                  std::ostream& out, std::ostream& err);

}  // namespace graspd::runtime
