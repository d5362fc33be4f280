#!/usr/bin/env bash
# Figure 9 at 8 VMs (1 Gbit/s egress, ResNet-50, KungFu MULTI_BINARY_TREE_STAR and Horovod),
# simulated and live on the testbed (root), each with its timeline and link statistics; draws
# docs/img/timeline-fig9-8vms.png (simulated above, live below, steps 1-2) and
# docs/img/link-stats-fig9-8vms-live.png, and prints each link's live bytes against the
# simulated ones (docs/figures.md, "Timelines and traffic per link").
#
#   scripts/fig9-8vms-traffic.sh [OUT]      (default OUT: out/fig9-8vms; about 30 s)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/fig9-8vms}
simctl=${SIMCTL:-build/sim/simctl/simctl}
common=(--set "sweep.topology.params.servers=[8]"
        --set "sweep.topology.params.nic_egress_bandwidth=[1Gbps]"
        --set "workload.models=[resnet50]" --set "workload.steps=2"
        # the testbed's own path latency (its veth/bridge hops; no netem to add fig9.yaml's 95 us)
        --set "topology.params.nic_latency=7.5us"
        --set "workload.systems=[{label: kungfu-mbts, kind: kungfu, strategy: MULTI_BINARY_TREE_STAR}, {label: horovod, kind: horovod}]"
        --link-stats-bin 10ms --no-progress)
rm -rf "$out"
"$simctl" run scenarios/fig9.yaml "${common[@]}" -o "$out/sim" --timeline "$out/sim-tl" \
  --link-stats "$out/sim-links"
"$simctl" run --live scenarios/fig9.yaml "${common[@]}" --set live.placement=testbed \
  --set live.prefix=fig9vms --set live.compute=sleep -o "$out/live" --timeline "$out/live-tl" \
  --link-stats "$out/live-links"
/usr/bin/python3 plots/timeline.py "$out/sim-tl/p0-resnet50-kungfu-mbts.trace.json" \
  "$out/live-tl/p0-resnet50-kungfu-mbts.trace.json" --steps 1:2 -o docs/img/timeline-fig9-8vms.png
/usr/bin/python3 plots/link_stats.py "$out/live-links/p0-resnet50-kungfu-mbts" \
  -o docs/img/link-stats-fig9-8vms-live.png
/usr/bin/python3 - "$out" <<'PY'
import csv, sys
out = sys.argv[1]
for system in ["kungfu-mbts", "horovod"]:
    def links(mode):
        path = f"{out}/{mode}-links/p0-resnet50-{system}.links.csv"
        return {r["resource"]: r for r in csv.DictReader(open(path))}
    def matrix(mode):
        path = f"{out}/{mode}-links/p0-resnet50-{system}.matrix.csv"
        return {(r["src_rank"], r["dst_rank"]): float(r["bytes"]) for r in csv.DictReader(open(path))}
    sim, live = links("sim"), links("live")
    ratios = [float(live[k]["bytes"]) / float(sim[k]["bytes"]) for k in live]
    peaks = [float(r["peak_utilization"]) for r in live.values()]
    ms, ml = matrix("sim"), matrix("live")
    print(f"{system}: {len(live)} links, live/simulated bytes {min(ratios):.4f}..{max(ratios):.4f}, "
          f"live peak utilization per 10 ms bin {max(peaks):.2f}; matrix {len(ms)} pairs simulated, "
          f"{len(ml)} live, {sum(ms.values()) / 1e6:.1f} vs {sum(ml.values()) / 1e6:.1f} MB")
PY
