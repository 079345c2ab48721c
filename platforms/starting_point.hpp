#pragma once
// `dsgd platforms new`: a platform file to edit, started from a catalog entry. It is the entry's JSON in the
// entry's own order, renamed, with a comment above each field saying what it is and in which unit, and each source
// marked as the catalog machine's, so a user changes what differs on their machine and says where their numbers
// come from (docs/platform-schema.md, "A platform of your own").

#include <string>
#include <string_view>

namespace dsgd::platforms {

// The commented text (JSON with // comments, which the loader reads) of catalog platform `from` renamed `name`.
// Throws UnknownNameError for an unknown `from`, InputError when `name` is not a valid platform name (the text is
// loaded before it is returned, so what it returns always loads).
std::string starting_point(std::string_view from, const std::string& name);

}  // namespace dsgd::platforms
