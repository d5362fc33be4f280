#!/usr/bin/env bash
# Open MPI's own MPI_Allreduce across the testbed's namespaces (issue 17 item 1): one testbed of
# cloud VMs (topologies/cloud-vms.yaml, every NIC capped at CAP both ways) with as many hosts as
# the largest count asked for; for each host count N, adaptsim-mpi on the first N hosts, one rank
# per host, float32 sum, 8 B .. 256 MiB: the algorithm coll/tuned's fixed decision picks, then each
# forced algorithm of MPI_MODES; then adaptsim-tcp on the same hosts as a control. Needs root.
# The testbed is torn down on exit and on signals (adaptsim-testbed run does it, and forwards
# SIGINT/SIGTERM to this script's inner part, whose processes in the namespaces it then kills).
#
#   scripts/testbed-mpi.sh [OUT=out/testbed-mpi] [CAP=1Gbps] [HOSTS="2 4 8 16"]
#
# Environment (defaults in brackets):
#   MPI_MODES       "fixed" (coll/tuned's fixed decision) and forced coll_tuned_allreduce_algorithm
#                   names, in order ["fixed ring recursive_doubling"]
#   MPI_MINBYTES    smallest size of every sweep [8B]
#   MPI_MAXBYTES    largest size of the fixed-decision sweep [256MiB]
#   MPI_FORCED_MAXBYTES  largest size of the forced sweeps [64MiB]
#   MPI_LARGE_BYTES from this size up, MPI_LARGE_ITERS timed calls after 1 warm-up [4MiB, 3];
#                   below it 20 timed after 5 warm-up
#   MPI_TCP_CONTROL the control: adaptsim-tcp's strategy on the same hosts, 64 KiB to
#                   MPI_FORCED_MAXBYTES ("" for none) [CLASSIC_RING]
#   MPI_YIELD_WHEN_IDLE  Open MPI's mpi_yield_when_idle [1]
#   MPI_MPIRUN_ARGS more mpirun arguments, split at spaces (e.g. "--mca btl_tcp_sndbuf 4194304")
#   MPI_CONGESTION_CONTROL  every host's default TCP congestion control, which Open MPI's
#                   sockets take (it sets none), "" for what new namespaces inherit [cubic:
#                   Linux's default, as validate-testbed.yaml and the control's live runs]
#   ADAPTSIM_BUILD  the build folder [build]
#
# How mpirun reaches the namespaces: mpirun itself runs inside host 0's namespace, so host 0's
# address in the hostfile is its own node; for every other host its rsh launch agent
# (plm_rsh_agent) is a generated script mapping the host's address to its namespace and running
# the daemon's command there (`ip netns exec NS sh -c CMD`), as ssh would on a real host; the
# daemons stay attached to it (--leave-session-attached: they end with mpirun, errors shown). The
# daemons and ranks talk over the testbed's subnet only (oob/btl tcp if_include); no shared
# memory (btl tcp,self: every rank is its own host), no binding (every "host" is the same 2..N
# cores, and binding would pin all ranks to the first), yield when idle (ranks outnumber cores).
#
# Writes to OUT: allreduce_mpi_<fixed|algorithm>_<N>r.csv (coll::SweepRow, adaptsim-mpi's
# columns), mpirun_<mode>_<N>r.log (each run's table), ompi_info_coll_tuned.txt and
# ompi_info_btl_tcp.txt (ompi_info --param ... --level 9), versions.txt, commands.txt, and
# placement_<N>r.txt (each rank's namespace, as `ip netns identify` names it), and the control's
# tcp_<N>r/allreduce_tcp.csv.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${ADAPTSIM_BUILD:-$here/build}"

if [ "${1:-}" = "--in-testbed" ]; then
  # The inner part, run by adaptsim-testbed with ADAPTSIM_TESTBED_HOSTS/_NS set.
  out="$2"; hosts_list="$3"
  IFS=, read -r -a ips <<< "$ADAPTSIM_TESTBED_HOSTS"
  IFS=, read -r -a nss <<< "$ADAPTSIM_TESTBED_NS"
  subnet="$(echo "${ips[0]}" | cut -d. -f1-2).0.0/16"
  work="$(mktemp -d /tmp/testbed-mpi.XXXXXX)"
  trap 'rm -rf "$work"' EXIT
  # The launch agent: `agent [options] HOST CMD...` as ssh is called; HOST is an address.
  {
    echo '#!/bin/sh'
    echo 'while [ "${1#-}" != "$1" ]; do shift; done  # ssh-style options, if any'
    echo 'host="$1"; shift'
    echo 'case "$host" in'
    for i in "${!ips[@]}"; do echo "  ${ips[$i]}) ns=${nss[$i]} ;;"; done
    echo '  *) echo "testbed-mpi agent: unknown host $host" >&2; exit 255 ;;'
    echo 'esac'
    # Each host's daemon its own session folder: the hosts share this machine's /tmp and host
    # name, and daemons starting at once in one folder collide (hw/runner/live_backend.cpp).
    echo "tmp=\"$work/ompi/\$ns\"; mkdir -p \"\$tmp\""
    echo 'exec ip netns exec "$ns" env OMPI_MCA_orte_tmpdir_base="$tmp" /bin/sh -c "$*"'
  } > "$work/agent"
  chmod 755 "$work/agent"
  tool="$build/hw/mpi/adaptsim-mpi"
  # plm rsh named: an environment's OMPI_MCA_plm (a container image's "isolated", seen on a lent
  # GPU machine) would otherwise start every rank in host 0's namespace.
  common=(--allow-run-as-root --oversubscribe --bind-to none
          --mca plm rsh --mca plm_rsh_agent "$work/agent" --mca plm_rsh_no_tree_spawn 1 --leave-session-attached
          --mca oob_tcp_if_include "$subnet" --mca btl tcp,self --mca btl_tcp_if_include "$subnet"
          --mca mpi_yield_when_idle "${MPI_YIELD_WHEN_IDLE:-1}" ${MPI_MPIRUN_ARGS:-})
  sizes=(--minbytes "${MPI_MINBYTES:-8B}" --large-bytes "${MPI_LARGE_BYTES:-4MiB}" --iters 20 --warmup-iters 5
         --large-iters "${MPI_LARGE_ITERS:-3}" --large-warmup-iters 1)
  declare -A algorithm_id=([basic_linear]=1 [nonoverlapping]=2 [recursive_doubling]=3 [ring]=4
                           [segmented_ring]=5 [rabenseifner]=6)
  for n in $hosts_list; do
    : > "$work/hostfile.$n"
    for i in $(seq 0 $((n - 1))); do echo "${ips[$i]} slots=1" >> "$work/hostfile.$n"; done
    # Where the ranks landed: each names its network namespace (one per host, in rank order).
    ip netns exec "${nss[0]}" mpirun "${common[@]}" --hostfile "$work/hostfile.$n" -np "$n" \
      sh -c 'echo "rank $OMPI_COMM_WORLD_RANK: netns $(ip netns identify)"' | sort -n -k2 \
      > "$out/placement_${n}r.txt"
  done
  # The fixed decision at every host count first, then each forced algorithm.
  for mode in ${MPI_MODES-fixed ring recursive_doubling}; do
    for n in $hosts_list; do
      if [ "$mode" = fixed ]; then
        force=(); max="${MPI_MAXBYTES:-256MiB}"
      else
        [ -n "${algorithm_id[$mode]:-}" ] || { echo "testbed-mpi: unknown algorithm $mode" >&2; exit 2; }
        force=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm "${algorithm_id[$mode]}")
        max="${MPI_FORCED_MAXBYTES:-64MiB}"
      fi
      cmd=(mpirun "${common[@]}" "${force[@]}" --hostfile "$work/hostfile.$n" -np "$n"
           "$tool" "${sizes[@]}" --maxbytes "$max" -o "$out")
      echo "ip netns exec ${nss[0]} ${cmd[*]}" >> "$out/commands.txt"
      echo "== $n hosts, $mode, up to $max ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))"
      ip netns exec "${nss[0]}" "${cmd[@]}" 2>&1 | tee "$out/mpirun_${mode}_${n}r.log"
    done
  done
  # A control on the same hosts, launch and caps: the project's own TCP all-reduce (adaptsim-tcp;
  # MPI only for the rendezvous, then finalised), whose ranks sleep in epoll where Open MPI's poll.
  control="${MPI_TCP_CONTROL-CLASSIC_RING}"
  if [ -n "$control" ]; then
    for n in $hosts_list; do
      cmd=(mpirun "${common[@]}" --hostfile "$work/hostfile.$n" -np "$n" "$build/hw/tcp/adaptsim-tcp"
           --strategy "$control" --minbytes 64KiB --maxbytes "${MPI_FORCED_MAXBYTES:-64MiB}"
           --stepfactor 4 --iters 5 --warmup-iters 2 --timeout 300s -o "$out/tcp_${n}r")
      echo "ip netns exec ${nss[0]} ${cmd[*]}" >> "$out/commands.txt"
      echo "== $n hosts, adaptsim-tcp $control ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))"
      ip netns exec "${nss[0]}" "${cmd[@]}" 2>&1 | tee "$out/tcp_${control}_${n}r.log"
    done
  fi
  exit 0
fi

out="${1:-$here/out/testbed-mpi}"; cap="${2:-1Gbps}"; hosts_list="${3:-2 4 8 16}"
cc="${MPI_CONGESTION_CONTROL-cubic}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
for t in hw/mpi/adaptsim-mpi hw/tcp/adaptsim-tcp hw/testbed/adaptsim-testbed; do
  [ -x "$build/$t" ] || { echo "testbed-mpi: build $(basename "$t") first ($build)" >&2; exit 2; }
done
command -v mpirun > /dev/null || { echo "testbed-mpi: no mpirun" >&2; exit 2; }
max_hosts=0
for n in $hosts_list; do [ "$n" -gt "$max_hosts" ] && max_hosts="$n"; done
[ "$max_hosts" -ge 2 ] || { echo "testbed-mpi: host counts must be at least 2" >&2; exit 2; }
: > "$out/commands.txt"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  mpirun --version | head -1
  echo "kernel: $(uname -r); cores: $(nproc); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "testbed: topologies/cloud-vms.yaml servers=$max_hosts nic_bandwidth=$cap"
  echo "congestion control: ${cc:-inherited by the namespaces}"
} > "$out/versions.txt"
ompi_info --param coll tuned --level 9 > "$out/ompi_info_coll_tuned.txt"
ompi_info --param btl tcp --level 9 > "$out/ompi_info_btl_tcp.txt"
cc_option=(); [ -z "$cc" ] || cc_option=(--congestion-control "$cc")
exec "$build/hw/testbed/adaptsim-testbed" run "$here/topologies/cloud-vms.yaml" \
  --prefix mpitb --set "servers=$max_hosts" --set "nic_bandwidth=$cap" "${cc_option[@]}" -- \
  "$here/scripts/testbed-mpi.sh" --in-testbed "$out" "$hosts_list"
