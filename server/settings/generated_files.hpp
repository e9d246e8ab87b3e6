// The checked-in files printed from the settings table, so none of them can drift from the
// code: settings_files_test compares each with what the binary prints, and
// server/settings/update_generated_files.sh rewrites them.
//   --print-env-file     packaging/knit-server.default (the whole file)
//   --print-man-options  packaging/knit-server.1, between its "generated options" markers
//   --print-markdown     docs/configuration.md, between its "generated" markers
#pragma once

#include <string>

namespace knit_server {

std::string env_file_text();
std::string man_options_text();
std::string markdown_text();

}  // namespace knit_server
