#include "actors/ops/engine/management_lists.hpp"

#include <optional>

namespace graspd::ops {

namespace {

using nostr::nip86::Method;

constexpr std::string_view config_reason = "config";

/// The list a change method works on.
std::optional<ModerationList> list_of(Method method) {
  switch (method) {
    case Method::banpubkey:
    case Method::unbanpubkey:
    case Method::listbannedpubkeys:
      return ModerationList::banned_pubkeys;
    case Method::banevent:
    case Method::unbanevent:
    case Method::listbannedevents:
      return ModerationList::banned_events;
    case Method::allowpubkey:
    case Method::unallowpubkey:
    case Method::listallowedpubkeys:
      return ModerationList::allowed_pubkeys;
    default:
      return std::nullopt;
  }
}

bool is_add(Method method) {
  return method == Method::banpubkey || method == Method::banevent || method == Method::allowpubkey;
}

bool is_remove(Method method) {
  return method == Method::unbanpubkey || method == Method::unbanevent ||
         method == Method::unallowpubkey;
}

/// The configuration option that holds a list's configured entries.
const char* option_of(ModerationList list) {
  return list == ModerationList::allowed_pubkeys ? "NGIT_REPOSITORY_WHITELIST"
                                                 : "NGIT_EVENT_BLACKLIST";
}

const char* key_name(ModerationList list) {
  return list == ModerationList::banned_events ? "id" : "pubkey";
}

ManagementStep error_step(std::string message) {
  ManagementStep step;
  step.error = std::move(message);
  return step;
}

ManagementStep result_step(std::string json) {
  ManagementStep step;
  step.result_json = std::move(json);
  return step;
}

/// The entry named by params[0] (64 hex digits) with the reason of params[1], if any.
std::optional<ModerationEntry> entry_of(ModerationList list,
                                        const std::vector<std::string>& params) {
  ModerationEntry entry;
  entry.list = list;
  if (params.empty() || params.size() > 2 || !nostr::from_hex(params[0], entry.key))
    return std::nullopt;
  if (params.size() == 2) entry.reason = params[1].substr(0, max_reason_bytes);
  return entry;
}

void append_item(std::string& out, ModerationList list, const nostr::Bytes32& key,
                 std::string_view reason) {
  if (out.size() > 1) out += ',';
  out += "{\"";
  out += key_name(list);
  out += "\":\"" + nostr::to_hex(key) + "\",\"reason\":" + nostr::nip86::json_string(reason) + "}";
}

}  // namespace

void ManagementLists::load(const ModerationEntry& entry) {
  runtime(entry.list)[entry.key] = entry.reason;
}

const ManagementLists::Entries& ManagementLists::runtime(ModerationList list) const {
  return runtime_[static_cast<std::size_t>(list)];
}

ManagementLists::Entries& ManagementLists::runtime(ModerationList list) {
  return runtime_[static_cast<std::size_t>(list)];
}

std::size_t ManagementLists::runtime_size(ModerationList list) const {
  return runtime(list).size();
}

const std::set<nostr::Bytes32>* ManagementLists::configured(ModerationList list) const {
  if (list == ModerationList::banned_pubkeys) return &configured_.banned_pubkeys;
  if (list == ModerationList::allowed_pubkeys) return &configured_.allowed_pubkeys;
  return nullptr;
}

std::string ManagementLists::unavailable(Method method) const {
  auto list = list_of(method);
  if (!list) return method == Method::supportedmethods ? "" : "unsupported method";
  if (!configured_.bans_available)
    return "the management lists need the GRASP-01 acceptance policy "
           "(NGIT_ACCEPTANCE_POLICY=open)";
  if (*list == ModerationList::allowed_pubkeys && !allow_list_in_use())
    return "no allow list in use: NGIT_REPOSITORY_WHITELIST has no npub entry";
  return {};
}

std::vector<std::string> ManagementLists::available_methods() const {
  std::vector<std::string> out;
  for (const auto& name : nostr::nip86::supported_method_names())
    if (unavailable(nostr::nip86::method_named(name)).empty()) out.push_back(name);
  return out;
}

ManagementStep ManagementLists::plan(Method method, const std::vector<std::string>& params) const {
  if (auto why = unavailable(method); !why.empty()) return error_step(std::move(why));
  if (method == Method::supportedmethods) {
    std::string json = "[";
    for (const auto& name : available_methods())
      json += (json.size() > 1 ? "," : "") + nostr::nip86::json_string(name);
    return result_step(json + "]");
  }
  auto list = *list_of(method);
  if (is_add(method)) return add(list, params);
  if (is_remove(method)) return remove(list, params);
  return listing(list);
}

ManagementStep ManagementLists::add(ModerationList list,
                                    const std::vector<std::string>& params) const {
  auto entry = entry_of(list, params);
  if (!entry)
    return error_step(std::string("invalid params: expected [<") + key_name(list) +
                      " as 64 hex digits>, <optional reason>]");
  auto step = result_step("true");
  const auto* fixed = configured(list);
  if (fixed && fixed->count(entry->key)) return step;  // configured already: nothing to add
  // A banned event leaves the store and purgatory (docs/operations.md, "Management API").
  if (list == ModerationList::banned_events) step.changes.delete_events.push_back(entry->key);
  step.changes.puts.push_back(std::move(*entry));
  return step;
}

ManagementStep ManagementLists::remove(ModerationList list,
                                       const std::vector<std::string>& params) const {
  auto entry = entry_of(list, params);
  if (!entry)
    return error_step(std::string("invalid params: expected [<") + key_name(list) +
                      " as 64 hex digits>]");
  const auto* fixed = configured(list);
  if (fixed && fixed->count(entry->key))
    return error_step(std::string("configured in ") + option_of(list) + ": remove it there");
  auto step = result_step("true");
  if (runtime(list).count(entry->key)) step.changes.erases.push_back(std::move(*entry));
  return step;
}

ManagementStep ManagementLists::listing(ModerationList list) const {
  std::string json = "[";
  if (const auto* fixed = configured(list))
    for (const auto& key : *fixed) append_item(json, list, key, config_reason);
  for (const auto& [key, reason] : runtime(list)) append_item(json, list, key, reason);
  return result_step(json + "]");
}

void ManagementLists::commit(const StoreModeration& changes) {
  for (const auto& entry : changes.puts) runtime(entry.list)[entry.key] = entry.reason;
  for (const auto& entry : changes.erases) runtime(entry.list).erase(entry.key);
}

}  // namespace graspd::ops
