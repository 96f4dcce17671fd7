#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The structure rules of docs/architecture.md, checked against the tree:
#  1. inside gateway/src, a room includes only rooms below it (or itself); rooms on the same
#     level do not include each other. A public header (gateway/include/idemgate/gateway) belongs
#     to the room that defines it (public_room below): an include of it, in either spelling, is an
#     include of that room, and the header's own includes follow its room's rule;
#  2. the libraries under the gateway (common, config, store) never include the gateway;
#  3. no product source file is longer than the limit (a file that grows past it is split by
#     role, not by line count);
#  4. every source file (C++, shell, Python, CMake, Lua, JavaScript, CSS, HTML; configuration files are not checked) names its license with an
#     SPDX line near its top.
# Prints every breach and exits 1 if there is one. Run by ctest (test "structure").
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
cd "$root"
max_lines="${MAX_LINES:-420}"

# Levels, bottom first: a room may include a room of a lower level.
declare -A level=(
  [http]=0 [core]=1 [observability]=2 [transport]=3 [upstream]=4 [state]=5
  [forward]=6 [tier]=6 [idempotency]=7 [reconcile]=8 [own]=8 [filter]=9
  [http1]=10 [http2]=10 [admin]=10 [runtime]=11
)
# The room of each public header (gateway/include/idemgate/gateway/<name>.hpp): where it is
# implemented, or for a header-only one, the lowest room that needs it.
declare -A public_room=(
  [http_rules]=http [response_rules]=http [head_scan]=http
  [plain_head]=http [span_fields]=http [span_parser]=http [head_splice]=http [head_facts]=http [client_address]=http
  [outcome]=core [problem_types]=core [problem_pages]=core [request_id]=core [tracing]=core
  [access_log_writer]=observability [metrics]=observability
  [tls]=transport [proxy_protocol]=transport
  [exchange_watch]=upstream
  [content_decoding]=idempotency [decision]=idempotency
  [fingerprint]=idempotency [json_key]=idempotency [key_syntax]=idempotency [refusal]=idempotency
  [scope]=idempotency
  [contract]=own
  [server]=runtime
)
breaches=0
breach() {
  echo "structure: $*"
  breaches=$((breaches + 1))
}

for dir in gateway/src/*/; do
  room="$(basename "$dir")"
  [[ -n "${level[$room]+x}" ]] || breach "gateway/src/$room: a room with no level (add it to check_structure.sh and docs/architecture.md)"
done
for file in gateway/src/*.cpp gateway/src/*.hpp; do
  [[ -e "$file" ]] && breach "$file: every gateway source lives in a room (a folder of gateway/src)"
done

public_dir=gateway/include/idemgate/gateway
for file in "$public_dir"/*.hpp; do
  name="$(basename "$file" .hpp)"
  [[ -n "${public_room[$name]+x}" ]] ||
    breach "$file: a public header with no room (add it to public_room in check_structure.sh)"
done
# The includes of `file` (of room `room`) as "<room> <spelling>" lines: "room/x.hpp" and
# <idemgate/gateway/x.hpp> (the latter as the room public_room gives it).
includes_of() {
  sed -n -e 's/^#include "\([a-z0-9_]*\)\/[^"]*".*/\1 &/p' \
    -e 's/^#include [<"]idemgate\/gateway\/\([a-z0-9_]*\)\.hpp[>"].*/@\1 &/p' "$1" |
    while read -r target spelling; do
      if [[ "$target" == @* ]]; then
        target="${public_room[${target#@}]:-}"
        [[ -n "$target" ]] || continue
      fi
      echo "$target $spelling"
    done
}
while IFS= read -r file; do
  if [[ "$file" == "$public_dir"/* ]]; then
    room="${public_room[$(basename "$file" .hpp)]:-}"
  else
    room="${file#gateway/src/}"
    room="${room%%/*}"
  fi
  from="${level[$room]:-}"
  [[ -n "$from" ]] || continue
  while read -r target spelling; do
    to="${level[$target]:-}"
    [[ -n "$to" ]] || continue
    if [[ "$target" != "$room" ]] && ((to >= from)); then
      breach "$file: $spelling: $room (level $from) may include only rooms below it ($target is level $to)"
    fi
  done < <(includes_of "$file")
done < <(find gateway/src "$public_dir" -name '*.[ch]pp' | sort)

while IFS= read -r hit; do
  breach "$hit: the libraries under the gateway do not include it"
done < <(grep -rn --include='*.[ch]pp' -E '#include [<"](idemgate/gateway/|gateway/)' common config store || true)

while read -r lines file; do
  [[ "$file" == total ]] && continue
  ((lines > max_lines)) && breach "$file: $lines lines (limit $max_lines): split it by role"
done < <(find gateway store config common loadtest order_service -name '*.[ch]pp' -print0 | xargs -0 wc -l)

while IFS= read -r file; do
  case "$file" in
  tests/gateway/data/* | tests/fuzz/corpus/* | tests/fuzz/crashes/*) continue ;;
  esac
  head -n 3 "$file" | grep -q 'SPDX-License-Identifier: Apache-2.0' ||
    breach "$file: no SPDX-License-Identifier line in its first three lines"
done < <(
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -- '*.cpp' '*.hpp' '*.sh' '*.py' '*.lua' '*.js' '*.css' '*.html' '*.cmake' '*CMakeLists.txt' .ci/run
  else
    find . -path ./build -prune -o \( -name '*.[ch]pp' -o -name '*.sh' -o -name '*.py' -o -name CMakeLists.txt \) -print | sed 's|^\./||'
  fi
)

if ((breaches > 0)); then
  echo "structure: $breaches breach(es)"
  exit 1
fi
echo "structure: rooms, includes, file sizes and license lines as docs/architecture.md says"
