#include "web/yarn_json_decode.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/json_nesting.h"
#include "web/yarn_json.h"

namespace weft::web {
namespace {

constexpr int kMaxJsonDepth = 32;

bool IsDigits(absl::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

absl::StatusOr<Json> ParseJsonObject(absl::string_view body) {
  if (absl::StripAsciiWhitespace(body).empty())
    return absl::InvalidArgumentError("the request body is empty; expected a JSON object");
  if (JsonNestingDepth(body, kMaxJsonDepth) > kMaxJsonDepth)
    return absl::InvalidArgumentError(
        absl::StrCat("the JSON body nests deeper than ", kMaxJsonDepth, " levels"));
  Json j = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("the request body is not valid JSON");
  if (!j.is_object())
    return absl::InvalidArgumentError(
        absl::StrCat("the request body is a JSON ", j.type_name(), "; expected an object"));
  return j;
}

// Typed field access with errors naming the field's path.
absl::Status TypeError(absl::string_view path, absl::string_view expected, const Json& got) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": expected ", expected, ", got a JSON ", got.type_name()));
}

absl::StatusOr<std::string> GetString(const Json& j, absl::string_view path) {
  if (!j.is_string()) return TypeError(path, "a string", j);
  return j.get<std::string>();
}

absl::StatusOr<int64_t> GetInt(const Json& j, absl::string_view path, int64_t min, int64_t max) {
  if (!j.is_number_integer()) return TypeError(path, "an integer", j);
  if (j.is_number_unsigned() &&
      j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", j.get<uint64_t>(), " is out of range [", min, ", ", max, "]"));
  const int64_t v = j.get<int64_t>();
  if (v < min || v > max)
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", v, " is out of range [", min, ", ", max, "]"));
  return v;
}

absl::StatusOr<bool> GetBool(const Json& j, absl::string_view path) {
  if (!j.is_boolean()) return TypeError(path, "true or false", j);
  return j.get<bool>();
}

// An object or array field that Weft does not support: only absent or empty.
absl::Status MustBeEmpty(const Json& j, absl::string_view path, absl::string_view why) {
  if (!j.is_object() && !j.is_array() && !j.is_null()) return TypeError(path, "an object", j);
  if (!j.empty()) return absl::InvalidArgumentError(absl::StrCat(path, " is not supported: ", why));
  return absl::OkStatus();
}

absl::Status ParseEnvironment(const Json& env, v1::ContainerLaunchContext* launch) {
  if (!env.is_object()) return TypeError("am-container-spec.environment", "an object", env);
  auto& out = *launch->mutable_environment();
  // YARN's form {"entry": [{"key": K, "value": V}, ...]} (or one entry object), or {K: V}.
  if (env.contains("entry") && env.size() == 1 && !env["entry"].is_string()) {
    const Json& entries = env["entry"];
    std::vector<const Json*> list;
    if (entries.is_array()) {
      for (const Json& e : entries) list.push_back(&e);
    } else {
      list.push_back(&entries);
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string path = absl::StrCat("am-container-spec.environment.entry[", i, "]");
      const Json& e = *list[i];
      if (!e.is_object()) return TypeError(path, "an object {key, value}", e);
      for (const auto& [k, v] : e.items()) {
        if (k != "key" && k != "value")
          return absl::InvalidArgumentError(
              absl::StrCat(path, ": unknown field ", QuoteClientText(k)));
      }
      if (!e.contains("key")) return absl::InvalidArgumentError(absl::StrCat(path, ": no key"));
      auto key = GetString(e["key"], path + ".key");
      if (!key.ok()) return key.status();
      auto value = e.contains("value") ? GetString(e["value"], path + ".value")
                                       : absl::StatusOr<std::string>("");
      if (!value.ok()) return value.status();
      out[*key] = *value;
    }
    return absl::OkStatus();
  }
  for (const auto& [k, v] : env.items()) {
    auto value = GetString(v, absl::StrCat("am-container-spec.environment.", k));
    if (!value.ok()) return value.status();
    out[k] = *value;
  }
  return absl::OkStatus();
}

absl::Status ParseContainerSpec(const Json& spec, v1::ContainerLaunchContext* launch) {
  if (!spec.is_object()) return TypeError("am-container-spec", "an object", spec);
  for (const auto& [k, v] : spec.items()) {
    const std::string path = absl::StrCat("am-container-spec.", k);
    if (k == "commands") {
      // YARN: {"command": "..."}; Weft also takes an argv array there, or a bare string.
      const Json* command = &v;
      if (v.is_object()) {
        for (const auto& [ck, cv] : v.items()) {
          if (ck != "command")
            return absl::InvalidArgumentError(
                absl::StrCat(path, ": unknown field ", QuoteClientText(ck)));
        }
        if (!v.contains("command"))
          return absl::InvalidArgumentError(absl::StrCat(path, ": no command"));
        command = &v["command"];
      }
      if (command->is_string()) {
        launch->add_command(command->get<std::string>());
      } else if (command->is_array()) {
        for (size_t i = 0; i < command->size(); ++i) {
          auto arg = GetString((*command)[i], absl::StrCat(path, ".command[", i, "]"));
          if (!arg.ok()) return arg.status();
          launch->add_command(*arg);
        }
      } else {
        return TypeError(path + ".command", "a string or an array of strings", *command);
      }
    } else if (k == "environment") {
      if (absl::Status s = ParseEnvironment(v, launch); !s.ok()) return s;
    } else if (k == "local-resources") {
      if (absl::Status s = MustBeEmpty(v, path,
                                       "Weft runs commands on the node's filesystem and "
                                       "localizes nothing");
          !s.ok())
        return s;
    } else if (k == "service-data" || k == "credentials" || k == "application-acls") {
      if (absl::Status s = MustBeEmpty(v, path, "not implemented by Weft"); !s.ok()) return s;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown field ", QuoteClientText(path)));
    }
  }
  if (launch->command().empty())
    return absl::InvalidArgumentError("am-container-spec.commands.command is required");
  return absl::OkStatus();
}

absl::Status ParseResource(const Json& r, v1::Resource* out) {
  if (!r.is_object()) return TypeError("resource", "an object", r);
  for (const auto& [k, v] : r.items()) {
    const std::string path = absl::StrCat("resource.", k);
    std::string type = k;
    if (k == "memory" || k == "memory-mb") {
      type = "memory-mb";
    } else if (k == "vCores" || k == "vcores") {
      type = "vcores";
    } else if (k.empty() || k.size() > 64 || !std::all_of(k.begin(), k.end(), [](char c) {
                 return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-';
               })) {
      return absl::InvalidArgumentError(absl::StrCat("unknown field ", QuoteClientText(path)));
    }
    auto value = GetInt(v, path, 0, std::numeric_limits<int64_t>::max());
    if (!value.ok()) return value.status();
    (*out->mutable_values())[type] = *value;
  }
  return absl::OkStatus();
}

}  // namespace

bool IsApplicationId(absl::string_view id) {
  if (id.size() > 64 || !absl::ConsumePrefix(&id, "application_")) return false;
  std::vector<absl::string_view> parts = absl::StrSplit(id, '_');
  return parts.size() == 2 && IsDigits(parts[0]) && IsDigits(parts[1]);
}

std::string QuoteClientText(absl::string_view text) {
  std::string out;
  for (char c : text.substr(0, 64)) out += absl::ascii_isprint(c) ? c : '?';
  if (text.size() > 64) out += "...";
  return absl::StrCat("'", out, "'");
}

absl::StatusOr<v1::ApplicationSubmissionContext> ParseSubmission(absl::string_view body) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  const Json& j = *parsed;
  v1::ApplicationSubmissionContext ctx;
  for (const auto& [k, v] : j.items()) {
    absl::Status st;
    if (k == "application-id") {
      auto id = GetString(v, k);
      if (!id.ok()) return id.status();
      if (!IsApplicationId(*id))
        return absl::InvalidArgumentError(
            absl::StrCat("application-id ", QuoteClientText(*id),
                         " is not an application id (application_<cluster ts>_<seq>)"));
      ctx.set_application_id(*id);
    } else if (k == "application-name") {
      auto name = GetString(v, k);
      if (!name.ok()) return name.status();
      ctx.set_name(*name);
    } else if (k == "queue") {
      auto queue = GetString(v, k);
      if (!queue.ok()) return queue.status();
      ctx.set_queue(*queue);
    } else if (k == "application-type") {
      auto type = GetString(v, k);
      if (!type.ok()) return type.status();
      ctx.set_application_type(*type);
    } else if (k == "priority") {
      auto p =
          GetInt(v, k, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
      if (!p.ok()) return p.status();
      ctx.set_priority(static_cast<int32_t>(*p));
    } else if (k == "max-app-attempts") {
      auto n = GetInt(v, k, 0, 1000);
      if (!n.ok()) return n.status();
      ctx.set_max_app_attempts(static_cast<int32_t>(*n));
    } else if (k == "resource") {
      st = ParseResource(v, ctx.mutable_am_resource());
    } else if (k == "am-container-spec") {
      st = ParseContainerSpec(v, ctx.mutable_am_container_spec());
    } else if (k == "unmanaged-AM" || k == "keep-containers-across-application-attempts") {
      auto b = GetBool(v, k);
      if (!b.ok()) return b.status();
      if (*b)
        return absl::InvalidArgumentError(
            absl::StrCat(k, "=true is not supported by Weft (",
                         k == "unmanaged-AM" ? "AMs run in containers"
                                             : "work-preserving AM restart is not built",
                         ")"));
    } else if (k == "application-tags" || k == "log-aggregation-context" ||
               k == "am-black-listing-requests") {
      if (!v.is_object() && !v.is_array() && !v.is_null()) return TypeError(k, "an object", v);
    } else if (k == "attempt-failures-validity-interval") {
      auto n = GetInt(v, k, -1, std::numeric_limits<int64_t>::max());
      if (!n.ok()) return n.status();
    } else if (k == "reservation-id") {
      auto id = GetString(v, k);
      if (!id.ok()) return id.status();
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown field ", QuoteClientText(k)));
    }
    if (!st.ok()) return st;
  }
  if (ctx.application_id().empty())
    return absl::InvalidArgumentError(
        "application-id is required (POST /ws/v1/cluster/apps/new-application gives one)");
  if (!ctx.has_am_container_spec())
    return absl::InvalidArgumentError("am-container-spec is required");
  return ctx;
}

absl::StatusOr<AppStateChange> ParseAppStateChange(absl::string_view body) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  AppStateChange change;
  std::string target;
  for (const auto& [k, v] : parsed->items()) {
    if (k == "state") {
      auto st = GetString(v, k);
      if (!st.ok()) return st.status();
      target = *st;
    } else if (k == "diagnostics") {
      auto d = GetString(v, k);
      if (!d.ok()) return d.status();
      change.diagnostics = d->substr(0, 4096);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown field ", QuoteClientText(k)));
    }
  }
  if (target != "KILLED")
    return absl::InvalidArgumentError(absl::StrCat(
        "Only 'KILLED' is allowed as a target state (got ", QuoteClientText(target), ")"));
  return change;
}

}  // namespace weft::web
