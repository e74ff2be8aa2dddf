#!/bin/sh
# tests/bench/readme-table.sh FILE < TABLE
# Replace what lies between the lines "<!-- bench-table:begin -->" and
# "<!-- bench-table:end -->" in FILE with stdin (the markers stay); a FILE
# without them gets both, with the table, at its end. The bench writes its
# one current table this way, never by hand.
set -eu
f=$1
[ -f "$f" ] || { echo "readme-table: $f missing" >&2; exit 2; }
tmp=$(mktemp "$f.XXXXXX")
trap 'rm -f "$tmp" "$tmp.table"' EXIT
cat >"$tmp.table"
if grep -qx '<!-- bench-table:begin -->' "$f" && grep -qx '<!-- bench-table:end -->' "$f"; then
    awk -v t="$tmp.table" '
        $0 == "<!-- bench-table:begin -->" { print; while ((getline l < t) > 0) print l; skip = 1; next }
        $0 == "<!-- bench-table:end -->" { skip = 0 }
        !skip { print }' "$f" >"$tmp"
else
    { cat "$f"; echo; echo '<!-- bench-table:begin -->'; cat "$tmp.table"; echo '<!-- bench-table:end -->'; } >"$tmp"
fi
cat "$tmp" >"$f"
