#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The structure rules of docs/architecture.md, checked against the tree:
#  1. inside gateway/src, a room includes only rooms below it (or itself); rooms on the same
#     level do not include each other;
#  2. the libraries under the gateway (common, config, store) never include the gateway;
#  3. no product source file is longer than the limit (a file that grows past it is split by
#     role, not by line count);
#  4. every source file (C++, shell, Python, CMake, Lua, JavaScript; configuration files are not checked) names its license with an
#     SPDX line near its top.
# Prints every breach and exits 1 if there is one. Run by ctest (test "structure").
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
cd "$root"
max_lines="${MAX_LINES:-420}"

# Levels, bottom first: a room may include a room of a lower level.
declare -A level=(
  [core]=0 [observability]=1 [transport]=2 [upstream]=3 [state]=4
  [idempotency]=5 [http1]=6 [http2]=6 [admin]=6 [runtime]=7
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

while IFS= read -r file; do
  room="${file#gateway/src/}"
  room="${room%%/*}"
  from="${level[$room]:-}"
  [[ -n "$from" ]] || continue
  while IFS= read -r included; do
    target="${included%%/*}"
    to="${level[$target]:-}"
    [[ -n "$to" ]] || continue
    if [[ "$target" != "$room" ]] && ((to >= from)); then
      breach "$file includes \"$included\": $room (level $from) may include only rooms below it"
    fi
  done < <(sed -n 's/^#include "\([a-z0-9_]*\/[^"]*\)".*/\1/p' "$file")
done < <(find gateway/src -name '*.[ch]pp' | sort)

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
    git ls-files -- '*.cpp' '*.hpp' '*.sh' '*.py' '*.lua' '*.js' '*.cmake' '*CMakeLists.txt' .ci/run
  else
    find . -path ./build -prune -o \( -name '*.[ch]pp' -o -name '*.sh' -o -name '*.py' -o -name CMakeLists.txt \) -print | sed 's|^\./||'
  fi
)

if ((breaches > 0)); then
  echo "structure: $breaches breach(es)"
  exit 1
fi
echo "structure: rooms, includes, file sizes and license lines as docs/architecture.md says"
