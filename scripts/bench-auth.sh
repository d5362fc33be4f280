#!/usr/bin/env bash
# The cost of frame authentication on the live TCP all-reduce (docs/reliability.md,
# "Authentication"): adaptsim-tcp at 64 MiB, 4 local processes, one per emulated host, against the
# same tool built from BASE_REV (default a3aed98, the last commit before authenticated frames) in
# build-base/. Three variants alternate, ROUNDS times each, so that a busy machine slows all
# alike: base; auth (tags on helper threads where the cores allow, the default); auth with
# --tag-threads 0 (every tag on the rank's loop thread: the helper threads' share). Prints every
# run's bus bandwidth, the medians and their ratios to base.
#
#   scripts/bench-auth.sh [--base-rev REV] [--rounds N] [--strategies LIST]
#                         [--new BINARY --base BINARY]
#
# Needs ./build built (scripts/build.sh). The base is built once (a git worktree under
# build-base/src, then only the adaptsim-tcp target). --new and --base name both binaries instead
# (the device machine's bundle, scripts/gpu-bundle.sh); without /usr/bin/python3 there, the runs
# are printed one per line.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
base_rev=a3aed98
rounds=7
strategies=CLASSIC_RING,BINARY_TREE_STAR
new=$root/build/hw/tcp/adaptsim-tcp
base=
while [[ $# -gt 0 ]]; do
  case $1 in
    --base-rev) base_rev=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --strategies) strategies=$2; shift ;;
    --new) new=$2; shift ;;
    --base) base=$2; shift ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d;s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
  shift
done

[[ -x $new ]] || { echo "bench-auth.sh: $new missing: run scripts/build.sh" >&2; exit 2; }
base_dir=$root/build-base
if [[ -n $base ]]; then
  [[ -x $base ]] || { echo "bench-auth.sh: $base missing" >&2; exit 2; }
  base_rev="$base_rev ($base)"
else
  base=$base_dir/build/hw/tcp/adaptsim-tcp
fi
if [[ $base == "$base_dir/build/hw/tcp/adaptsim-tcp" &&
      ( ! -x $base || $(cat "$base_dir/rev" 2>/dev/null) != "$base_rev" ) ]]; then
  rm -rf "$base_dir/src"
  git worktree prune
  git worktree add --detach "$base_dir/src" "$base_rev" > /dev/null
  cmake -S "$base_dir/src" -B "$base_dir/build" -DCMAKE_BUILD_TYPE=Release -DADAPTSIM_CUDA=OFF \
    -DADAPTSIM_BUILD_TESTS=OFF -DADAPTSIM_BUILD_BENCHMARKS=OFF > /dev/null
  cmake --build "$base_dir/build" -j"$(nproc)" --target adaptsim-tcp > /dev/null
  echo "$base_rev" > "$base_dir/rev"
fi

run() {  # BINARY [ARGS...] -> one line per strategy: strategy busbw_GBps
  local out
  out=$(mktemp -d)
  "$@" --procs 4 --ranks-per-host 1 --strategy "$strategies" --minbytes 64MiB --maxbytes 64MiB \
    --iters 10 --warmup-iters 3 --check 0 -q -o "$out"
  # allreduce_tcp.csv: size_bytes,count,type,redop,strategy,n_ranks,time_us,algbw,busbw,wrong
  tail -n +2 "$out/allreduce_tcp.csv" | awk -F, '{print $5, $9}'
  rm -rf "$out"
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for ((i = 1; i <= rounds; i++)); do
  run "$base" | sed 's/^/base /' >> "$results"
  run "$new" | sed 's/^/auth /' >> "$results"
  run "$new" --tag-threads 0 | sed 's/^/auth-inline /' >> "$results"
done
if [[ ! -x /usr/bin/python3 ]]; then
  cat "$results"
  exit 0
fi
rev=$(git rev-parse --short HEAD 2> /dev/null || echo "the working tree")
/usr/bin/python3 - "$results" "$base_rev" "$rev" << 'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print(f"# busbw at 64 MiB, 4 processes on loopback, GB/s (medians): base {sys.argv[2]} vs {sys.argv[3]}")
variants = ["base", "auth", "auth-inline"]
print(f"{'strategy':<20}" + "".join(f"{v:>13}" for v in variants) + f"{'auth/base':>11}{'inline/base':>13}")
for s in sorted({r[1] for r in rows}):
    med = {v: statistics.median(float(r[2]) for r in rows if r[0] == v and r[1] == s) for v in variants}
    print(f"{s:<20}" + "".join(f"{med[v]:>13.3f}" for v in variants) +
          f"{med['auth'] / med['base']:>11.3f}{med['auth-inline'] / med['base']:>13.3f}")
print("# every run:")
for v in variants:
    for s in sorted({r[1] for r in rows}):
        print(f"#   {v:<12}{s:<20}" + " ".join(r[2] for r in rows if r[0] == v and r[1] == s))
EOF
