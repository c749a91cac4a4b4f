#!/usr/bin/env bash
# The house rules a newcomer relies on (issue 34), checked:
# 1. Dependencies point one way. No crate under contract/, platform/ or host/ depends, even for
#    its tests or benches (normal and dev dependencies), on a crate under switch-ctl/ or tools/;
#    no crate under contract/ depends on one under host/.
# 2. No Rust file holds more than 1,000 lines of non-test code (the lines before its
#    `#[cfg(test)]` module; files under tests/, benches/ and fuzz/ are tests) unless one of its
#    first five lines says why, starting with `// long:`.
#
#   tools/layout/check.sh          (exit 1 and a list when a rule is broken)
set -euo pipefail
cd "$(dirname "$0")/../.."
fail=0

# Crate names by folder, from `cargo metadata`.
meta=$(cargo metadata --format-version 1 --no-deps)
crates_under() {
    printf '%s' "$meta" | python3 -c '
import json, sys
root, sub = sys.argv[1], sys.argv[2]
for p in json.load(sys.stdin)["packages"]:
    if p["manifest_path"].startswith(root + "/" + sub + "/"):
        print(p["name"])' "$PWD" "$1"
}
low=$(for d in contract platform host; do crates_under "$d"; done)
high=$(for d in switch-ctl tools; do crates_under "$d"; done)
hostc=$(crates_under host)
for c in $low; do
    deps=$(cargo tree -q -p "$c" -e normal,dev --prefix none --format '{p}' 2>/dev/null |
        awk '{print $1}' | sort -u)
    for h in $high; do
        if printf '%s\n' "$deps" | grep -qx "$h"; then
            echo "dependency: $c (contract/platform/host) depends on $h (switch-ctl/tools)"
            fail=1
        fi
    done
    case " $(crates_under contract | tr '\n' ' ') " in
        *" $c "*)
            for h in $hostc; do
                if printf '%s\n' "$deps" | grep -qx "$h"; then
                    echo "dependency: $c (contract) depends on $h (host)"
                    fail=1
                fi
            done ;;
    esac
done

while IFS= read -r f; do
    n=$(awk '/^#\[cfg\(test\)\]/ { exit } { n++ } END { print n + 0 }' "$f")
    if [ "$n" -gt 1000 ] && ! head -5 "$f" | grep -q '^// long:'; then
        echo "size: $f has $n non-test lines (split it, or say why in a \`// long:\` line at its top)"
        fail=1
    fi
done < <(git ls-files '*.rs' | grep -vE '(^|/)(tests|benches|fuzz)/')

if [ "$fail" = 0 ]; then
    echo "layout: dependencies point one way; no file over 1,000 non-test lines without a reason"
fi
exit "$fail"
