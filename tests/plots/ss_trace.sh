#!/bin/sh
# Usage: ss_trace.sh PLOTS_DIR WORK_DIR
# plots/ss_trace.py on synthetic `ss -tin` polls: host 1 sends to host 0 (10.0.0.1) over two
# connections: one with 2 MB acknowledged between t = 0 and t = 0.5 s and 1 MB more by t = 1.0 s,
# the other 1 MB in each half second; with 0.5 s bins the pair carries 6.0 then 4.0 MB/s (the
# two connections' counters are apart, not read as one). Host 0's connection to host 1 carried
# under 1 MB and is not listed. --window 1>0 prints the cwnd, ssthresh, RTT and unsent bytes of
# each poll of each of the pair's connections.
set -e
plots=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
cat > "$work/ss-h1.txt" <<'SS'
100.000000000
State Recv-Q Send-Q Local Address:Port Peer Address:Port Process
ESTAB 0      65536  10.0.0.2:40000 10.0.0.1:7300
	 cubic wscale:7,7 rto:204 rtt:15.5/1.2 mss:1448 cwnd:40 ssthresh:28 bytes_acked:1000000 segs_out:10
ESTAB 0      0      10.0.0.2:40001 10.0.0.1:7300
	 cubic rtt:15/1 mss:1448 cwnd:20 bytes_acked:5000000 segs_out:10
100.500000000
State Recv-Q Send-Q Local Address:Port Peer Address:Port Process
ESTAB 0      32768  10.0.0.2:40000 10.0.0.1:7300
	 cubic wscale:7,7 rto:204 rtt:90.25/3 mss:1448 cwnd:60 ssthresh:28 bytes_acked:3000000 segs_out:20
ESTAB 0      0      10.0.0.2:40001 10.0.0.1:7300
	 cubic rtt:15/1 mss:1448 cwnd:21 bytes_acked:6000000 segs_out:20
101.000000000
State Recv-Q Send-Q Local Address:Port Peer Address:Port Process
ESTAB 0      0      10.0.0.2:40000 10.0.0.1:7300
	 cubic wscale:7,7 rto:204 rtt:20/3 mss:1448 cwnd:70 ssthresh:28 bytes_acked:4000000 segs_out:30
ESTAB 0      0      10.0.0.2:40001 10.0.0.1:7300
	 cubic rtt:15/1 mss:1448 cwnd:22 bytes_acked:7000000 segs_out:30
SS
cat > "$work/ss-h0.txt" <<'SS'
100.000000000
ESTAB 0      0      10.0.0.1:7300 10.0.0.2:40000
	 cubic rtt:1/1 cwnd:10 bytes_acked:1 segs_out:1
100.500000000
ESTAB 0      0      10.0.0.1:7300 10.0.0.2:40000
	 cubic rtt:1/1 cwnd:10 bytes_acked:500 segs_out:2
SS
/usr/bin/python3 "$plots/ss_trace.py" "$work" --bin 0.5 --window '1>0' > "$work/out.txt"
cat "$work/out.txt"
grep -q '^  t(s)   1>0$' "$work/out.txt"
grep -q '^  0.00   6.0$' "$work/out.txt"
grep -q '^  0.50   4.0$' "$work/out.txt"
grep -q '^connection 1>0 (ports 40001>7300)' "$work/out.txt"
grep -q '^  0.50    21     -      15         0$' "$work/out.txt"
grep -q '^  0.50    60    28   90.25     32768$' "$work/out.txt"
