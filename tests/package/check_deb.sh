#!/usr/bin/env bash
# check_deb.sh <dir with the .deb files>: what a user of the packages gets, checked without
# installing them: every .deb is extracted (dpkg-deb -x) into one temporary tree, which
# must hold the files each package promises; the extracted knit-server runs on a free port
# (PORT=0, loopback only) and answers GET /ping, then stops cleanly on SIGTERM; and
# examples/ builds and runs against the extracted headers and libraries, through the CMake
# package (CMAKE_PREFIX_PATH=<tree>/usr) and pkg-config (check_examples.sh).
# The last step of `./knit package`.
set -euo pipefail
debs=$(readlink -f "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/knit-deb-check.XXXXXX")
server_pid=
cleanup() {
  [ -z "$server_pid" ] || kill -KILL "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "check_deb: $*" >&2; exit 1; }

root=$work/root
mkdir -p "$root"
shopt -s nullglob
packages=("$debs"/*.deb)
[ ${#packages[@]} -gt 0 ] || fail "no .deb in $debs"
for deb in "${packages[@]}"; do
  dpkg-deb -x "$deb" "$root"
  echo "check_deb: extracted $(basename "$deb")"
done

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
lib=usr/lib/$multiarch
for f in usr/bin/knit-server lib/systemd/system/knit-server.service etc/default/knit-server \
         "$lib"/libknit.a "$lib"/libknit.so "$lib"/libknit.so.0.1 "$lib"/libknit.so.0.1.0 \
         "$lib"/cmake/knit/knitConfig.cmake "$lib"/pkgconfig/knit.pc \
         "$lib"/pkgconfig/knit-shared.pc usr/include/knit/knit.hpp usr/include/knit/export.hpp; do
  [ -e "$root/$f" ] || fail "missing from the packages: /$f"
done
# The unit starts the binary where the package puts it, with the packaged settings.
unit=$root/lib/systemd/system/knit-server.service
grep -qx 'ExecStart=/usr/bin/knit-server' "$unit" || fail "ExecStart is not /usr/bin/knit-server"
grep -qx 'EnvironmentFile=-/etc/default/knit-server' "$unit" || fail "no EnvironmentFile"

# The packaged server, on a free loopback port.
out=$work/server.out
PORT=0 HOST=127.0.0.1 JWT_SECRET=check-deb "$root/usr/bin/knit-server" >"$out" 2>"$work/server.err" &
server_pid=$!
url=
for _ in $(seq 1 150); do  # up to 15 s
  url=$(sed -n 's/^listening on //p' "$out")
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || fail "knit-server exited: $(cat "$work/server.err")"
  sleep 0.1
done
[ -n "$url" ] || fail "knit-server printed no 'listening on' line"
case "$url" in http://127.0.0.1:*) ;; *) fail "not on loopback: $url" ;; esac
pong=$(curl -sS --max-time 5 "$url/ping")
grep -q '"pong":true' <<<"$pong" || fail "GET /ping answered: $pong"
echo "check_deb: the packaged knit-server on $url answered /ping: $pong"
kill -TERM "$server_pid"
code=0
wait "$server_pid" || code=$?
server_pid=
[ "$code" -eq 0 ] || fail "knit-server exited $code after SIGTERM: $(cat "$work/server.err")"

# A user's project against the extracted headers and libraries.
"$here/check_examples.sh" "$root/usr" "$work/examples"
echo "check_deb: passed"
