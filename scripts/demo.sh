#!/usr/bin/env bash
# switchyard demo: a switch and four hosts in network namespaces, driven by
# the three daemons against a private redis-server.
#
#   scripts/demo.sh          build what is missing, run the demo, stay up until Ctrl-C
#   scripts/demo.sh clean    remove everything a demo left behind (make demo-clean)
#
# This script plays the role of the cabling and of the hosts: it creates
# namespaces and veth pairs with ip(8) and pings between hosts. Everything
# on the switch itself (port state, MTU, addresses, VLANs, routes, FDB,
# impairments) is configured by the daemons from Redis, written by swctl.
#
# Environment:
#   SWITCHYARD_DEMO_EXIT=1       exit (and clean up) after the showcase
#   SWITCHYARD_DEMO_MODE=auto    auto | vlan | routed (auto: VLANs when the kernel has 802.1Q)
#   SWITCHYARD_DEMO_RUN=DIR      run directory (default /run/switchyard-demo)
#   SWITCHYARD_DEMO_PREFIX=P     prefix of the namespace names (default none: sw, h0-h3)
#   SWITCHYARD_DEMO_NO_BUILD=1   use bin/ as it is (no install-deps, no make build)
#   SWITCHYARD_DEMO_WAIT=30s     how long swctl wait waits for the daemons
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${SWITCHYARD_BIN:-$ROOT/bin}
RUN=${SWITCHYARD_DEMO_RUN:-/run/switchyard-demo}
P=${SWITCHYARD_DEMO_PREFIX:-}
SW=${P}sw
HOSTS="${P}h0 ${P}h1 ${P}h2 ${P}h3"
SOCK=$RUN/redis.sock
REDIS=unix://$SOCK
BPFFS=$RUN/bpffs
DAEMONS="orchagent syncd impaird trafficd"
export SWITCHYARD_REDIS=$REDIS

if [ -t 1 ]; then B=$(printf '\033[1m') N=$(printf '\033[0m'); else B="" N=""; fi
say()  { printf '\n%s==> %s%s\n' "$B" "$*" "$N"; }
note() { printf 'demo: %s\n' "$*"; }
die()  { printf 'demo: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- cleanup

# pid_of NAME prints the pid recorded for NAME when that process is still
# ours (its command line names our run directory or socket).
pid_of() {
	local f=$RUN/$1.pid pid
	[ -f "$f" ] || return 1
	pid=$(cat "$f")
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$RUN" || return 1
	echo "$pid"
}

cleanup() {
	local name pid pids="" i
	trap - EXIT INT TERM
	for name in $DAEMONS redis; do
		if pid=$(pid_of "$name"); then
			kill -TERM "$pid" 2>/dev/null || true
			pids="$pids $pid"
		fi
	done
	for i in $(seq 50); do
		local alive=""
		for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive="$alive $pid"; done
		pids=$alive
		[ -z "$pids" ] && break
		sleep 0.1
	done
	for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
	for pid in $pids; do # SIGKILL is asynchronous: let them go before removing their namespaces
		for i in $(seq 20); do [ -r "/proc/$pid/cmdline" ] && [ -s "/proc/$pid/cmdline" ] || break; sleep 0.1; done
	done
	for ns in $HOSTS $SW ${P}swprobe; do
		ip netns del "$ns" 2>/dev/null || true
	done
	if mountpoint -q "$BPFFS" 2>/dev/null; then
		umount "$BPFFS" || umount -l "$BPFFS" || true
	fi
	rm -rf "$RUN"
}

if [ "${1:-}" = clean ]; then
	[ "$(id -u)" = 0 ] || die "needs root: sudo make demo-clean"
	cleanup
	note "cleaned up: namespaces $SW $HOSTS, daemons, redis-server, $RUN"
	exit 0
fi
[ $# -eq 0 ] || die "usage: $0 [clean]"

# ------------------------------------------------------------ preparation

[ "$(id -u)" = 0 ] || die "needs root (network namespaces, XDP): sudo make demo"
if [ -z "${SWITCHYARD_DEMO_NO_BUILD:-}" ] && [ -z "${MAKELEVEL:-}" ]; then
	"$ROOT/scripts/install-deps.sh"
	make -C "$ROOT" --no-print-directory build
fi
for tool in ip ping redis-server mountpoint; do
	command -v "$tool" >/dev/null || die "$tool is missing: run scripts/install-deps.sh as root"
done
[ -x "$BIN/swctl" ] || die "$BIN/swctl is missing: run make build"
if [ -d "$RUN" ] && pid_of redis >/dev/null; then
	die "a demo is already running in $RUN: stop it with Ctrl-C or make demo-clean"
fi
cleanup # leftovers of a demo that was killed
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$RUN"

swctl() { "$BIN/swctl" "$@"; }

# Kernel variant: VLANs need 802.1Q devices and bridge VLAN filtering.
probe_vlan() {
	modprobe 8021q 2>/dev/null || true
	ip netns add "${P}swprobe" || return 1
	local ok=1
	ip -n "${P}swprobe" link add name probebr type bridge vlan_filtering 1 2>/dev/null &&
		ip -n "${P}swprobe" link add link probebr name probebr.100 type vlan id 100 2>/dev/null && ok=0
	ip netns del "${P}swprobe"
	return $ok
}
MODE=${SWITCHYARD_DEMO_MODE:-auto}
case $MODE in
auto)
	if probe_vlan; then
		MODE=vlan
		say "Kernel $(uname -r) has 802.1Q and bridge VLAN filtering: VLAN demo (demo/vlan.json)"
	else
		MODE=routed
		say "Kernel $(uname -r) lacks 802.1Q VLAN devices or bridge VLAN filtering: routed-port demo (demo/routed.json)"
	fi ;;
vlan)   say "SWITCHYARD_DEMO_MODE=vlan: VLAN demo (demo/vlan.json)" ;;
routed) say "SWITCHYARD_DEMO_MODE=routed: routed-port demo (demo/routed.json)" ;;
*)      die "SWITCHYARD_DEMO_MODE=$MODE: want auto, vlan or routed" ;;
esac

# ------------------------------------------------------------- topology

say "Cabling: namespace $SW (ports Ethernet0-3), hosts $HOSTS"
ip netns add "$SW"
ip -n "$SW" link set lo up
echo 1 | ip netns exec "$SW" tee /proc/sys/net/ipv4/ip_forward >/dev/null # route between ports
i=0
for h in $HOSTS; do
	ip netns add "$h"
	ip -n "$h" link set lo up
	# The switch side stays down: orchagent brings it up from PORT admin_status.
	ip -n "$SW" link add name "Ethernet$i" type veth peer name eth0 netns "$h" address "02:00:00:00:0$i:00"
	ip -n "$h" link set eth0 up
	i=$((i + 1))
done
set -- $HOSTS
H0=$1 H1=$2 H2=$3 H3=$4
ip -n "$H3" addr add 10.99.0.1/32 dev lo # behind h3: reached through the static route
if [ "$MODE" = vlan ]; then
	ip -n "$H0" addr add 10.1.0.10/24 dev eth0; ip -n "$H0" route add default via 10.1.0.1
	ip -n "$H1" addr add 10.1.0.11/24 dev eth0; ip -n "$H1" route add default via 10.1.0.1
	ip -n "$H2" addr add 10.2.0.10/24 dev eth0; ip -n "$H2" route add default via 10.2.0.1
	ip -n "$H3" link add link eth0 name eth0.200 type vlan id 200
	ip -n "$H3" link set eth0.200 up
	ip -n "$H3" addr add 10.2.0.11/24 dev eth0.200; ip -n "$H3" route add default via 10.2.0.1
	CONFIG=$ROOT/demo/vlan.json
	TARGETS="h1:10.1.0.11 h2:10.2.0.10 h3:10.2.0.11 h3-lo:10.99.0.1"
	IMPAIRED=10.1.0.11
else
	for n in 0 1 2 3; do
		eval h=\$H$n
		ip -n "$h" addr add "10.0.$n.2/24" dev eth0
		ip -n "$h" route add default via "10.0.$n.1"
	done
	CONFIG=$ROOT/demo/routed.json
	TARGETS="h1:10.0.1.2 h2:10.0.2.2 h3:10.0.3.2 h3-lo:10.99.0.1"
	IMPAIRED=10.0.1.2
fi

# ------------------------------------------------------ redis and daemons

say "Private redis-server on $SOCK (keyspace notifications on)"
redis-server --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --save '' --appendonly no \
	--dir "$RUN" --logfile "$RUN/redis.log" --notify-keyspace-events AKE >/dev/null 2>&1 &
echo $! >"$RUN/redis.pid"
for _ in $(seq 100); do [ -S "$SOCK" ] && swctl show state >/dev/null 2>&1 && break; sleep 0.1; done
swctl show state >/dev/null || die "redis-server did not start; see $RUN/redis.log"

mkdir -p "$BPFFS"
mount -t bpf bpf "$BPFFS" # a private bpffs: unmounting it at cleanup drops every pin
say "Daemons (--netns $SW), logs in $RUN/*.log"
MISSING=""
for d in $DAEMONS; do
	if [ ! -x "$BIN/$d" ]; then
		note "$d is not built yet ($BIN/$d missing): continuing without it"
		MISSING="$MISSING $d"
		continue
	fi
	extra=""
	[ "$d" = impaird ] && extra="--bpffs $BPFFS"
	# shellcheck disable=SC2086
	"$BIN/$d" --redis "$REDIS" --netns "$SW" --log-level info $extra >"$RUN/$d.log" 2>&1 &
	echo $! >"$RUN/$d.pid"
	note "started $d (pid $!)"
done
sleep 0.5
for d in $DAEMONS; do
	case " $MISSING " in *" $d "*) continue ;; esac
	if ! pid_of "$d" >/dev/null; then
		note "$d exited at start; last lines of $RUN/$d.log:"
		tail -n 5 "$RUN/$d.log" | sed 's/^/    /'
		MISSING="$MISSING $d"
	fi
done

# -------------------------------------------------------------- showcase

WAIT=${SWITCHYARD_DEMO_WAIT:-30s}
say "swctl config load $CONFIG"
swctl config load "$CONFIG"
say "swctl wait --timeout $WAIT"
swctl wait --timeout "$WAIT" || note "not every entry is applied (above); continuing"

say "swctl show interfaces"
swctl show interfaces
if [ "$MODE" = vlan ]; then
	say "swctl show vlan"
	swctl show vlan
fi
say "swctl show ip route"
swctl show ip route
say "swctl show state"
swctl show state

# ping_summary FROM TARGET COUNT INTERVAL: one line with loss and latency.
ping_summary() {
	local from=$1 name=${2%%:*} addr=${2#*:} out loss rtt
	out=$(ip netns exec "$from" ping -n -q -c "$3" -i "$4" -W 1 "$addr" 2>&1) || true
	loss=$(printf '%s\n' "$out" | sed -n 's/.* \([0-9.]*\)% packet loss.*/\1/p')
	rtt=$(printf '%s\n' "$out" | sed -n 's|^rtt min/avg/max/mdev = \([^ ]*\) ms.*|\1|p')
	printf '  %-4s -> %-6s %-12s %4s sent  loss %5s%%  rtt min/avg/max/mdev %s ms\n' \
		"${from#"$P"}" "$name" "$addr" "$3" "${loss:-?}" "${rtt:--}"
}

say "Pings from h0 (20 each)"
for t in $TARGETS; do ping_summary "$H0" "$t" 20 0.02; done

say "Impairment: 20% loss on packets arriving on Ethernet1 (h1's replies); 50% on ICMP from h2 (a flow rule)"
swctl config impairment set Ethernet1 --loss 20 --seed 7
swctl config impairment flow add Ethernet2 icmp --proto icmp --loss 50 --seed 7
swctl wait --timeout "$WAIT" || note "the impairment is not applied (above); continuing"
swctl show impairment

say "Pings from h0 again (200 to h1 and h2)"
for t in $TARGETS; do
	case $t in h1:* | h2:*) ping_summary "$H0" "$t" 200 0.01 ;; *) ping_summary "$H0" "$t" 20 0.02 ;; esac
done

say "Background traffic: 20 kpps of IMIX out of Ethernet3 towards h3 for 3 s (trafficd)"
rx0=$(ip -n "$H3" -j -s link show eth0 | sed -n 's/.*"rx":{"bytes":[0-9]*,"packets":\([0-9]*\).*/\1/p')
swctl config traffic add Ethernet3 bg rate 20kpps size imix duration 3s
swctl wait --timeout "$WAIT" || note "the stream did not start (above); continuing"
sleep 3.5
swctl show traffic
rx1=$(ip -n "$H3" -j -s link show eth0 | sed -n 's/.*"rx":{"bytes":[0-9]*,"packets":\([0-9]*\).*/\1/p')
note "h3's eth0 received $(( ${rx1:-0} - ${rx0:-0} )) frames meanwhile (ip -s link; pings and ARP included)"

sleep 1.5 # impaird and syncd publish counters every second
say "swctl show impairment --counters"
swctl show impairment --counters
say "swctl show interfaces --counters"
swctl show interfaces --counters

say "A schedule: packets arriving on Ethernet1 alternate between no loss and 100% loss every 0.5 s"
swctl config impairment schedule add blink --steps "0s loss 0; 500ms loss 100; 1s end" --loop
swctl config impairment set Ethernet1 --clear --schedule blink
swctl wait --timeout "$WAIT" || note "the schedule is not applied (above); continuing"
for i in 1 2 3 4; do
	swctl show impairment schedule | tail -n +3
	for t in $TARGETS; do case $t in h1:*) ping_summary "$H0" "$t" 10 0.02 ;; esac; done
	sleep 0.1
done
swctl config impairment set Ethernet1 --clear --loss 20 --seed 7
if [ -n "$MISSING" ]; then
	note "ran without:$MISSING (not built or exited); their tables stay empty"
fi

if [ "${SWITCHYARD_DEMO_EXIT:-}" = 1 ]; then
	say "SWITCHYARD_DEMO_EXIT=1: cleaning up"
	exit 0
fi
say "The demo is running. In another shell:"
cat <<EOF
  export SWITCHYARD_REDIS=$REDIS
  $BIN/swctl show interfaces
  $BIN/swctl config impairment set Ethernet2 --loss 5 --rate 10mbit
  ip netns exec $H0 ping ${IMPAIRED}
Press Ctrl-C here (or run make demo-clean) to remove everything.
EOF
# Until Ctrl-C, or until make demo-clean (run elsewhere) stops redis-server.
while pid_of redis >/dev/null; do sleep 1; done
note "redis-server is gone (make demo-clean?): exiting"
