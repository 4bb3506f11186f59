#include "config/yarn_xml.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace weft::config::yarn_internal {
namespace {

// The offset of the first byte of `s` that does not belong to well-formed UTF-8 (no overlong
// forms, surrogates or code points past U+10FFFF); npos when there is none.
size_t FirstInvalidUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    // The sequence's length, the lead byte's bits, and the least code point it may encode.
    size_t len = 0;
    uint32_t cp = 0;
    uint32_t min = 0;
    if ((b & 0xe0) == 0xc0) {
      len = 2;
      cp = b & 0x1f;
      min = 0x80;
    } else if ((b & 0xf0) == 0xe0) {
      len = 3;
      cp = b & 0x0f;
      min = 0x800;
    } else if ((b & 0xf8) == 0xf0) {
      len = 4;
      cp = b & 0x07;
      min = 0x10000;
    } else {
      return i;
    }
    if (i + len > s.size()) return i;
    for (size_t k = 1; k < len; ++k) {
      const auto c = static_cast<uint8_t>(s[i + k]);
      if ((c & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += len;
  }
  return absl::string_view::npos;
}

}  // namespace

int LineAt(const std::string& text, ptrdiff_t offset) {
  if (offset < 0) return 0;
  size_t end = std::min(static_cast<size_t>(offset), text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + end, '\n'));
}

int LineOf(const XmlFile& f, const pugi::xml_node& n) { return LineAt(f.text, n.offset_debug()); }

absl::Status ErrorAt(const XmlFile& f, int line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(f.name, ":", line, ": ", what));
}

absl::Status LoadXml(const XmlFile& f, pugi::xml_document* doc) {
  pugi::xml_parse_result r = doc->load_buffer(f.text.data(), f.text.size());
  if (!r)
    return ErrorAt(f, LineAt(f.text, r.offset), absl::StrCat("malformed XML: ", r.description()));
  if (r.encoding == pugi::encoding_utf8) {
    size_t bad = FirstInvalidUtf8(f.text);
    if (bad != absl::string_view::npos)
      return ErrorAt(f, LineAt(f.text, static_cast<ptrdiff_t>(bad)),
                     absl::StrCat("malformed XML: byte 0x",
                                  absl::Hex(static_cast<uint8_t>(f.text[bad]), absl::kZeroPad2),
                                  " is not well-formed UTF-8 (declare the file's encoding)"));
  }
  return absl::OkStatus();
}

std::string Trimmed(absl::string_view s) { return std::string(absl::StripAsciiWhitespace(s)); }

std::string TextOf(const pugi::xml_node& n) { return Trimmed(n.child_value()); }

std::string Render(const pugi::xml_node& n, bool open_tag_only) {
  std::string out = absl::StrCat("<", n.name());
  for (const pugi::xml_attribute& a : n.attributes())
    absl::StrAppend(&out, " ", a.name(), "=\"", a.value(), "\"");
  bool has_elements = false;
  for (const pugi::xml_node& c : n.children())
    if (c.type() == pugi::node_element) has_elements = true;
  if (has_elements) {
    if (open_tag_only) return out + ">";
    std::ostringstream s;
    n.print(s, "", pugi::format_raw);
    return s.str();
  }
  std::string text = TextOf(n);
  if (text.empty()) return out + "/>";
  return absl::StrCat(out, ">", text, "</", n.name(), ">");
}

absl::StatusOr<std::vector<Property>> ReadHadoopConfiguration(const XmlFile& f,
                                                              std::vector<LineNote>* notes) {
  auto note = [&](int line, absl::string_view what, absl::string_view why) {
    notes->push_back({line, absl::StrCat(what, ": ", why)});
  };
  pugi::xml_document doc;
  if (absl::Status s = LoadXml(f, &doc); !s.ok()) return s;
  pugi::xml_node conf = doc.document_element();
  if (absl::string_view(conf.name()) != "configuration")
    return ErrorAt(
        f, LineOf(f, conf),
        absl::StrCat("expected the document element <configuration>, found <", conf.name(), ">"));
  std::vector<Property> props;
  for (const pugi::xml_node& n : conf.children()) {
    if (n.type() == pugi::node_pcdata && !TextOf(n).empty()) {
      note(LineOf(f, n), absl::StrCat("text '", TextOf(n), "'"),
           "text outside a <property> means nothing to Hadoop either");
      continue;
    }
    if (n.type() != pugi::node_element) continue;
    if (absl::string_view(n.name()) != "property") {
      note(LineOf(f, n), Render(n, true),
           "only <property> elements are read (XInclude and the like are not followed)");
      continue;
    }
    Property p;
    p.line = LineOf(f, n);
    bool has_name = false;
    for (const pugi::xml_node& c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      absl::string_view cn = c.name();
      if (cn == "name") {
        p.name = TextOf(c);
        has_name = true;
      } else if (cn == "value") {
        p.value = TextOf(c);
        p.raw = c.child_value();
      } else if (cn != "description" && cn != "final" && cn != "source" && cn != "tag") {
        note(LineOf(f, c), Render(c), "not part of a Hadoop <property>");
      }
    }
    if (!has_name || p.name.empty()) return ErrorAt(f, p.line, "<property> without a <name>");
    props.push_back(std::move(p));
  }
  // Hadoop keeps the last of a repeated property.
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < props.size(); ++i) last[props[i].name] = i;
  for (size_t i = 0; i < props.size(); ++i) {
    size_t l = last[props[i].name];
    if (l == i) continue;
    props[i].handled = true;
    note(props[i].line, absl::StrCat(props[i].name, "=", props[i].value),
         absl::StrCat("overridden by the same property at line ", props[l].line,
                      " (Hadoop keeps the last)"));
  }
  // ${name} references to other properties of the file.
  std::map<std::string, std::string> values = {{"yarn.resourcemanager.hostname", "0.0.0.0"},
                                               {"yarn.nodemanager.hostname", "0.0.0.0"}};
  for (size_t i = 0; i < props.size(); ++i)
    if (last[props[i].name] == i) values[props[i].name] = props[i].value;
  for (Property& p : props) {
    for (int depth = 0; depth < 20; ++depth) {
      size_t open = p.value.find("${");
      if (open == std::string::npos) break;
      size_t close = p.value.find('}', open);
      if (close == std::string::npos) break;
      auto it = values.find(p.value.substr(open + 2, close - open - 2));
      if (it == values.end()) break;
      p.value.replace(open, close - open + 1, it->second);
    }
  }
  return props;
}

}  // namespace weft::config::yarn_internal
