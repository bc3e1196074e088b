#!/usr/bin/env bash
# The admin API's field names: docs/admin.md's schema ("Wire": the requests, the replies
# and STATUS) names the same fields as server/control/admin_fields.h, which the server and
# detshare-ctl spell them from.
# usage: test_admin_fields.sh ADMIN_FIELDS_H ADMIN_MD
set -euo pipefail
header=$1 doc=$2
tmp=$(mktemp -d /tmp/ds-fields.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

sed -nE 's/^#define DS_ADMIN_KEY_[A-Z0-9_]+ +"([a-z0-9_]+)"$/\1/p' "$header" | sort >"$tmp/code"
# A field in the schema is a quoted name followed by a colon.
sed -n '/^## Wire/,/^## /p' "$doc" | grep -oE '"[a-z0-9_]+":' | tr -d '":' | sort -u >"$tmp/doc"
[ -s "$tmp/code" ] && [ -s "$tmp/doc" ] || { echo "FAIL: no fields found" >&2; exit 1; }
if ! diff -u --label "docs ($doc)" --label "$header" "$tmp/doc" "$tmp/code"; then
    echo "FAIL: docs/admin.md's schema and admin_fields.h name different fields" >&2
    exit 1
fi
echo "ok: $(wc -l <"$tmp/code") fields, documented alike"
