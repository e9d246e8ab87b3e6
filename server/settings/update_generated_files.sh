#!/usr/bin/env bash
# Rewrites the files printed from knit-server's table of settings (generated_files.hpp):
#   packaging/knit-server.default   knit-server --print-env-file (the whole file)
#   packaging/knit-server.1         knit-server --print-man-options, between its markers
#   docs/configuration.md           knit-server --print-markdown, between its markers
# Usage: server/settings/update_generated_files.sh build/bin/knit-server
# settings_files_test fails until the checked-in files match what the binary prints.
set -euo pipefail
server=$(realpath "${1:?usage: $0 path/to/knit-server}")
cd "$(dirname "$0")/../.."

# Replaces the lines between the line $2 and the line $3 of file $1 with stdin.
splice() {
  local file=$1 begin=$2 end=$3 generated
  generated=$(mktemp)
  cat >"$generated"
  grep -qxF -- "$begin" "$file" || { echo "$file: no line '$begin'" >&2; exit 1; }
  grep -qxF -- "$end" "$file" || { echo "$file: no line '$end'" >&2; exit 1; }
  # Through ENVIRON, not -v: awk would read the backslash of the man page's marker as an escape.
  BEGIN_LINE=$begin END_LINE=$end GENERATED=$generated awk '
    $0 == ENVIRON["BEGIN_LINE"] {
      print
      while ((getline line < ENVIRON["GENERATED"]) > 0) print line
      skip = 1
      next
    }
    $0 == ENVIRON["END_LINE"] { skip = 0 }
    !skip { print }' "$file" >"$file.new"
  mv "$file.new" "$file"
  rm -f "$generated"
}

env -i "$server" --print-env-file >packaging/knit-server.default
env -i "$server" --print-man-options |
  splice packaging/knit-server.1 '.\" BEGIN GENERATED OPTIONS' '.\" END GENERATED OPTIONS'
env -i "$server" --print-markdown |
  splice docs/configuration.md '<!-- BEGIN GENERATED: knit-server --print-markdown -->' \
    '<!-- END GENERATED -->'
echo "rewrote packaging/knit-server.default, packaging/knit-server.1, docs/configuration.md"
