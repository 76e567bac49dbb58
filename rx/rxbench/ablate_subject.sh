#!/usr/bin/env bash
# ablate_subject.sh OUT: builds, from a scratch copy of this checkout's
# HEAD, one rx test binary per part of Subject.OnNext's contract removed
# (OUT/abl-<part>.test), for BenchmarkSubjectParts; docs/performance.md
# ("What a Subject row is made of") reads them. The edited builds are
# unsafe (no exclusion, no panic release): for measurement only.
set -euo pipefail
out=$(realpath "${1:?usage: ablate_subject.sh OUT}")
mkdir -p "$out"
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/wt"; rm -rf "$tmp"' EXIT
git -C "$root" worktree add -q --detach "$tmp/wt" HEAD
cd "$tmp/wt/rx"
cp subject.go "$tmp/subject.go"
edit() { # edit NAME PYTHON-REPLACEMENTS...: apply each "old=>new" to subject.go, then build
    name=$1; shift
    python3 - "$@" <<'P'
import sys
s = open('subject.go').read()
for pair in sys.argv[1:]:
    old, new = pair.split('=>')
    old, new = old.replace('\\n', '\n').replace('\\t', '\t'), new.replace('\\n', '\n').replace('\\t', '\t')
    if old not in s:
        sys.exit('ablate_subject.sh: OnNext no longer has: ' + old)
    s = s.replace(old, new, 1)
open('subject.go', 'w').write(s)
P
    go test -c -o "$out/abl-$name.test" .
    cp "$tmp/subject.go" subject.go
}
stopped='\tif s.stopped.Load() {=>\tif false {'
curg='\tg := curg()=>\tg := uintptr(0xc000)'
cas1='\tif !s.mb.take(g) {=>\tif false {'
cas2='\ts.mb.leave(g)\n}=>}'
deferred='\tdefer s.mb.unwind(g)\n=>'
edit base
edit no-stopped "$stopped"
edit no-curg "$curg"
edit no-cas "$cas1" "$cas2"
edit no-defer "$deferred"
edit none "$stopped" "$curg" "$cas1" "$cas2" "$deferred"
echo "built $out/abl-{base,no-stopped,no-curg,no-cas,no-defer,none}.test"
