// Copyright Weft authors. Reading Apache Hadoop's XML configuration files for the YARN importer
// (yarn_import.h): a document parsed with the line of each node, errors that name FILE:LINE,
// elements quoted on one line for messages, and a Hadoop Configuration file
// (<configuration><property><name/><value/></property>...) read into its properties. Internal
// to src/config/; pure, no I/O.
#ifndef WEFT_CONFIG_YARN_XML_H_
#define WEFT_CONFIG_YARN_XML_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "config/yarn_import.h"
#include "pugixml.hpp"

namespace weft::config::yarn_internal {

// The 1-based line of byte `offset` of `text` (offsets past the end count as the end); 0 when
// `offset` is negative (unknown).
int LineAt(const std::string& text, ptrdiff_t offset);

// The line where `n`, a node of the document parsed from `f`, starts.
int LineOf(const XmlFile& f, const pugi::xml_node& n);

// InvalidArgument "<file>:<line>: <what>".
absl::Status ErrorAt(const XmlFile& f, int line, absl::string_view what);

// Parses `f` into `*doc`. InvalidArgument "<file>:<line>: malformed XML: ..." at the first
// error, also when a document read as UTF-8 holds bytes that are not well-formed UTF-8 (they
// could not be written back unchanged).
absl::Status LoadXml(const XmlFile& f, pugi::xml_document* doc);

// `s` without leading and trailing ASCII whitespace.
std::string Trimmed(absl::string_view s);

// An element's text, trimmed: <weight> 2.0 </weight> -> "2.0".
std::string TextOf(const pugi::xml_node& n);

// An element as one line for messages: <rule name="user" create="false"/>, <weight>0</weight>,
// the element with its children written without indentation, or only its opening tag when it
// has child elements and `open_tag_only`.
std::string Render(const pugi::xml_node& n, bool open_tag_only = false);

// One <property> of a Hadoop Configuration file.
struct Property {
  std::string name;
  std::string value;  // trimmed, with ${...} expanded where known
  std::string raw;    // as written: ACLs keep their leading space (" admins" = group admins)
  int line = 0;
  bool handled = false;  // converted, or listed as unconverted
};

// Something of a file that is not converted, at a line: "<what>: <why>".
struct LineNote {
  int line = 0;
  std::string text;
};

// Reads a Hadoop Configuration file: its properties in file order. A repeated property is kept
// each time, all but the last marked handled and noted (Hadoop keeps the last); ${name}
// references to the file's own properties (and to yarn.resourcemanager.hostname and
// yarn.nodemanager.hostname, "0.0.0.0" by default) are expanded in `value`. What is not a
// <property> (text, other elements, unknown children of a <property>) is appended to `*notes`.
// InvalidArgument naming the file and line: malformed XML, a document element other than
// <configuration>, a <property> without a <name>.
absl::StatusOr<std::vector<Property>> ReadHadoopConfiguration(const XmlFile& f,
                                                              std::vector<LineNote>* notes);

}  // namespace weft::config::yarn_internal

#endif  // WEFT_CONFIG_YARN_XML_H_
