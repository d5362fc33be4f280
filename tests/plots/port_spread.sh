#!/bin/sh
# Usage: port_spread.sh PLOTS_DIR WORK_DIR
# plots/port_spread.py on a synthetic `simctl run --trace-connections` CSV: ranks 1, 2 and 3
# send 10, 20 and 30 MB to rank 0 over [0, 1 s] (10, 20, 30 MB/s: 60 MB/s into its port, so each
# of the four 0.25 s intervals is busy); CV = pstdev(10, 20, 30) / 20 = 0.41. Rank 0 sends to
# one peer only, so no fan-out port has three connections. With --busy 70 nothing is busy. A
# missing trace is one clear line and exit 1.
set -e
plots=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
cat > "$work/t.connections.csv" <<'CSV'
src_rank,dst_rank,start_s,end_s,bytes
1,0,0.000000000,1.000000000,10000000
2,0,0.000000000,0.500000000,10000000
2,0,0.500000000,1.000000000,10000000
3,0,0.000000000,1.000000000,30000000
0,1,0.000000000,1.000000000,5000000
CSV
/usr/bin/python3 "$plots/port_spread.py" "$work/t.connections.csv" > "$work/out.txt"
cat "$work/out.txt"
grep -q 'fan-out: no busy interval; fan-in CV 0.41 over 4 busy intervals (4 all active)$' \
  "$work/out.txt"
/usr/bin/python3 "$plots/port_spread.py" "$work/t.connections.csv" --busy 70 > "$work/out2.txt"
grep -q 'fan-in: no busy interval$' "$work/out2.txt"
if /usr/bin/python3 "$plots/port_spread.py" "$work/missing.csv" 2> "$work/err.txt"; then
  echo "a missing trace should fail"; exit 1
fi
grep -q 'missing.csv: no such trace' "$work/err.txt"
