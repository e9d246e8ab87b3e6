// zod 3.23's z.string().email() check, as a hand-written matcher.
#pragma once

#include <string_view>

namespace knit_server::routes {

// `emailRegex.test(s)` for zod 3.23 (unchanged through 3.25):
//   /^(?!\.)(?!.*\.\.)([A-Z0-9_'+\-\.]*)[A-Z0-9_+-]@([A-Z0-9][A-Z0-9\-]*\.)+[A-Z]{2,}$/i
// Every character class is ASCII, and without the u flag /i folds no non-ASCII character
// into ASCII (Canonicalize keeps e.g. U+017F and U+212A as they are), so only ASCII matches.
bool is_zod_email(std::string_view s);

}  // namespace knit_server::routes
