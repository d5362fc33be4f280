#!/usr/bin/env bash
# scripts/check-layering.sh: the tree as it is passes; a copy with a planted include across the
# layers (sim/coll including hw/tcp, hw/live including the flow model) fails, naming each file
# and line; a source folder without a rule fails too.
set -euo pipefail
root="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$root/scripts/check-layering.sh" "$root" > "$work/clean.log" || { cat "$work/clean.log"; fail "the tree breaks its own layering"; }
grep -q "every include within its layer's rule" "$work/clean.log" || fail "no summary line"

cp -r "$root/sim" "$root/hw" "$root/calibrate" "$work/"
printf '#include "hw/tcp/runtime.h"\n' >> "$work/sim/coll/strategy.cpp"
printf '#include "sim/net/flow_network.h"\n' >> "$work/hw/live/live_env.cpp"
strategy_lines=$(wc -l < "$work/sim/coll/strategy.cpp")
env_lines=$(wc -l < "$work/hw/live/live_env.cpp")
if "$root/scripts/check-layering.sh" "$work" > "$work/bad.log"; then
  cat "$work/bad.log"; fail "planted includes passed"
fi
cat "$work/bad.log"
grep -q "^sim/coll/strategy.cpp:$strategy_lines: includes \"hw/tcp/runtime.h\": sim/coll may include only sim/core$" "$work/bad.log" ||
  fail "sim/coll's include of hw/tcp not reported at its line"
grep -q "^hw/live/live_env.cpp:$env_lines: includes \"sim/net/flow_network.h\"" "$work/bad.log" ||
  fail "hw/live's include of the flow model not reported at its line"
grep -q "^layering: 2 violation(s)" "$work/bad.log" || fail "expected exactly 2 violations"

mkdir -p "$work/sim/newlayer" && touch "$work/sim/newlayer/x.cpp"
sed -i '$d' "$work/sim/coll/strategy.cpp"; sed -i '$d' "$work/hw/live/live_env.cpp"
if "$root/scripts/check-layering.sh" "$work" > "$work/new.log"; then fail "a folder without a rule passed"; fi
grep -q "^sim/newlayer: no layering rule" "$work/new.log" || { cat "$work/new.log"; fail "the new folder is not named"; }
echo "PASS"
