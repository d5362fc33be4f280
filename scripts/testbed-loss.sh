#!/usr/bin/env bash
# One TCP connection's throughput on the testbed against the NICs' packet loss (the mechanism
# behind net::Network's loss model, sim/net/network.h): for each loss, a two-host testbed of
# topologies/cloud-vms.yaml at 1 Gbit/s with `nic_loss` set (the testbed drops arriving packets
# with the two NIC links' probability, iptables in each host's namespace), then one connection
# sends for SECONDS. Prints CSV: loss, the drop probability per packet on the path and the
# receiver's MB/s, a row per LOSS given (repeat one for repetitions). The CSV is what a workload's
# `loss_rates` reads (traces/loss/).
#
#   scripts/testbed-loss.sh [SECONDS] [LOSS...]      (root; default 4 s, 0% 0.1% 0.5% 1% 2%)
#
# LOSS_CONGESTION_CONTROL (default cubic, Linux's default and the training scenarios'
# `live.congestion_control`) is each namespace's algorithm; before 2026-11-27 the script left the
# machine's own (BBR here), which does not back off on random loss.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-4}
shift || true
losses=("$@")
[ ${#losses[@]} -gt 0 ] || losses=(0% 0.1% 0.5% 1% 2%)
testbed=build/hw/testbed/adaptsim-testbed
[ -x "$testbed" ] || { echo "testbed-loss.sh: $testbed missing (scripts/build.sh)" >&2; exit 2; }
inner=$(mktemp)
trap 'rm -f "$inner"' EXIT
cat > "$inner" <<'INNER'
set -euo pipefail
IFS=, read -ra ns <<< "$ADAPTSIM_TESTBED_NS"
IFS=, read -ra hosts <<< "$ADAPTSIM_TESTBED_HOSTS"
p=$(ip netns exec "${ns[1]}" iptables -S INPUT | sed -n 's/.*--probability \([0-9.]*\).*/\1/p')
ip netns exec "${ns[1]}" python3 -c "
import socket, time
s = socket.socket(); s.bind(('${hosts[1]}', 5201)); s.listen(1); c, _ = s.accept()
n, t0 = 0, time.time()
while True:
    b = c.recv(1 << 20)
    if not b: break
    n += len(b)
print('%s,%s,%.1f' % ('$LOSS', '${p:-0}', n / (time.time() - t0) / 1e6))" &
sleep 0.5
ip netns exec "${ns[0]}" python3 -c "
import socket, time
s = socket.create_connection(('${hosts[1]}', 5201)); buf = b'x' * (1 << 20); t0 = time.time()
while time.time() - t0 < $SECONDS_: s.sendall(buf)
s.close()"
wait
INNER
echo "nic_loss,drop_probability,MBps"
for loss in "${losses[@]}"; do
  LOSS=$loss SECONDS_=$seconds "$testbed" run topologies/cloud-vms.yaml --set servers=2 \
    --set nic_bandwidth=1Gbps --set "nic_loss=$loss" \
    --congestion-control "${LOSS_CONGESTION_CONTROL:-cubic}" -- bash "$inner" 2>/dev/null
done
