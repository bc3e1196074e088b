#!/usr/bin/env bash
# docs/admin.md's table of server options against the server's own list of them
# (server/options.h), as --help prints it: the same options with the same arguments.
# usage: test_server_options.sh DETSHARE_SERVER ADMIN_MD
set -euo pipefail
server=$1 doc=$2
tmp=$(mktemp -d /tmp/ds-options.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

"$server" --help >"$tmp/help"
# An option's line: two spaces, the option and its argument, then its help.
sed -nE 's/^  ((-[a-z], )?--[a-z-]+( [^ ]+)?)( .*)?$/\1/p' "$tmp/help" | sort >"$tmp/code"
# The table's rows: the first cell's code span, its escaped '|' unescaped.
sed -n '/^## Server options/,/^## /p' "$doc" |
    sed -nE 's/^\| `([^`]+)` \|.*/\1/p' | sed 's/\\|/|/g' | sort >"$tmp/doc"
[ -s "$tmp/code" ] || { echo "FAIL: no options in --help" >&2; exit 1; }
if ! diff -u --label "docs ($doc)" --label "server/options.h (--help)" "$tmp/doc" "$tmp/code"; then
    echo "FAIL: docs/admin.md's option table and server/options.h disagree" >&2
    exit 1
fi
echo "ok: $(wc -l <"$tmp/code") options, documented alike"
