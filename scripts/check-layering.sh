#!/usr/bin/env bash
# Checks that every #include "sim/...", "hw/..." or "calibrate/..." in the source folders points
# only at layers its folder may depend on (docs/architecture.md, "Layers"), so the layering stays
# true: sim/ never includes hw/, sim/coll knows only sim/core, nothing under hw/ sees the flow
# model (sim/net, sim/fabric, sim/simulate) or the scenario runner (sim/run).
#
#   scripts/check-layering.sh [ROOT]      ROOT: the source tree (default: this repository)
#
# Prints one line per offending include (file:line: what it includes, what the folder may use)
# and exits 1 if there is any; exits 0 and prints a summary otherwise.
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"

# folder -> the folders it may include besides itself (each a layer below it).
declare -A allowed=(
  [sim/core]=""
  [sim/topo]="sim/core"
  [sim/net]="sim/core sim/topo"
  [sim/coll]="sim/core"
  [sim/learn]="sim/core"
  [sim/fabric]="sim/core sim/topo sim/net sim/coll"
  [sim/io]="sim/core sim/topo"
  [sim/train]="sim/core sim/topo sim/coll sim/io sim/learn"
  [sim/runtime]="sim/core sim/topo sim/coll sim/io sim/train"
  [sim/simulate]="sim/core sim/topo sim/net sim/coll sim/fabric sim/io sim/train sim/runtime"
  [sim/run]="sim/core sim/topo sim/net sim/coll sim/fabric sim/io sim/train sim/runtime sim/simulate"
  [sim/simctl]="sim/core sim/topo sim/net sim/coll sim/fabric sim/io sim/train sim/runtime sim/simulate sim/run"
  [hw/tcp]="sim/core sim/coll"
  [hw/mpi]="sim/core sim/coll hw/tcp"
  [hw/cuda]="sim/core"
  [hw/nccl]="sim/core sim/coll hw/cuda"
  [hw/testbed]="sim/core sim/topo sim/io"
  [hw/live]="sim/core sim/topo sim/coll sim/io sim/learn sim/train sim/runtime hw/tcp hw/cuda"
  [hw/runner]="sim/core sim/topo sim/io sim/train sim/runtime hw/testbed"
  [calibrate]="sim/core sim/topo sim/coll sim/io sim/train hw/tcp hw/cuda hw/nccl"
)

# One pass over every file of the ruled folders (their own files, not subfolders): awk reads each
# file's includes and checks each against its folder's rule.
rules=""
for folder in "${!allowed[@]}"; do
  rules+="$folder=${allowed[$folder]};"
done
files=()
for folder in "${!allowed[@]}"; do
  [ -d "$folder" ] || continue
  while IFS= read -r -d '' file; do
    files+=("$file")
  done < <(find "$folder" -maxdepth 1 -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' \) -print0)
done
checked=${#files[@]}
set +e
if [ "$checked" -gt 0 ]; then
  awk -v rules="$rules" '
    BEGIN {
      n = split(rules, entries, ";")
      for (i = 1; i <= n; i++) {
        if (entries[i] == "") continue
        eq = index(entries[i], "=")
        folder = substr(entries[i], 1, eq - 1)
        list[folder] = substr(entries[i], eq + 1)
        m = split(list[folder], deps, " ")
        for (k = 1; k <= m; k++) ok[folder, deps[k]] = 1
      }
    }
    /^[[:space:]]*#[[:space:]]*include[[:space:]]+"(sim|hw|calibrate)\// {
      target = $0
      sub(/^[^"]*"/, "", target)
      sub(/".*$/, "", target)
      folder = FILENAME
      sub(/\/[^\/]*$/, "", folder)
      # The included file'"'"'s folder: sim/x or hw/x (two parts), calibrate (one).
      if (target ~ /^calibrate\//) {
        dep = "calibrate"
      } else {
        split(target, parts, "/")
        dep = parts[1] "/" parts[2]
      }
      if (dep == folder || ok[folder, dep]) next
      printf "%s:%d: includes \"%s\": %s may include only %s\n", FILENAME, FNR, target, folder,
             (list[folder] == "" ? "itself" : list[folder])
      bad++
    }
    END { exit bad > 255 ? 255 : bad }
  ' "${files[@]}"
  bad=$?
else
  bad=0
fi
set -e

# Every folder with sources must have its rule: a new layer is a decision, not an accident.
while IFS= read -r dir; do
  [ -n "${allowed[$dir]+set}" ] && continue
  echo "$dir: no layering rule (add it to scripts/check-layering.sh and docs/architecture.md)"
  bad=$((bad + 1))
done < <(find sim hw calibrate -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' \) \
           -printf '%h\n' 2>/dev/null | sort -u)

if [ $bad -gt 0 ]; then
  echo "layering: $bad violation(s) in $checked files"
  exit 1
fi
echo "layering: $checked files, every include within its layer's rule"
