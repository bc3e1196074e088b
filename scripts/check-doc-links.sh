#!/bin/sh
# Fail when a markdown file of the tree links, by a relative path, to a file or folder
# that is not there: the docs cite each other and the lab notebook's results, and a move
# must not leave a reader at a dead link.  Links with a scheme (https:, mailto:) and
# links within a page (#anchor) are not checked; neither is what fenced code blocks hold,
# nor reference-style definitions ([label]: path), which the docs do not use (a line
# such as "[measured]: ..." in docs/export-tables.md would read as one).
# Usage: check-doc-links.sh [SOURCE_DIR]   (default: the tree this script is in)
set -eu
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
bad=$(mktemp)
trap 'rm -f "$bad"' EXIT

find . -type d \( -name .git -o -name .dev -o -name 'build*' -o -name node_modules \) -prune -o \
    -name '*.md' -type f -print | sort | while read -r md; do
    awk '
        /^[ \t]*(```|~~~)/ { fence = !fence; next }
        fence { next }
        {
            line = $0
            while (match(line, /\]\([^)]*\)/)) {
                t = substr(line, RSTART + 2, RLENGTH - 3)
                line = substr(line, RSTART + RLENGTH)
                sub(/^[ \t]*</, "", t); sub(/>[ \t]*$/, "", t)
                sub(/[ \t]+"[^"]*"[ \t]*$/, "", t)
                print NR "\t" t
            }
        }' "$md" | while IFS='	' read -r n target; do
        case $target in
            ''|'#'*|*://*|mailto:*) continue ;;
        esac
        path=${target%%#*}
        path=${path%%\?*}
        case $path in
            /*) file=.$path ;;
            *) file=$(dirname "$md")/$path ;;
        esac
        [ -e "$file" ] || echo "${md#./}:$n: $target" >> "$bad"
    done
done

if [ -s "$bad" ]; then
    echo "links to files that do not exist:" >&2
    cat "$bad" >&2
    exit 1
fi
echo "check-doc-links: every relative link resolves"
