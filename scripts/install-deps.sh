#!/bin/sh
# Installs what building, testing and the demo need, when it is missing.
# Safe to run repeatedly; does nothing when everything is present.
# Needs root for apt-get; without root it only reports what is missing.
set -eu

need=""
have() { command -v "$1" >/dev/null 2>&1; }
have redis-server  || need="$need redis-server"
have ip            || need="$need iproute2"
have ping          || need="$need iputils-ping"
have clang         || need="$need clang llvm"
[ -e /usr/include/bpf/bpf_helpers.h ] || need="$need libbpf-dev"
have qemu-system-x86_64 || need="$need qemu-system-x86"
[ -e /bin/busybox ] || [ -e /usr/bin/busybox ] || need="$need busybox-static"
ls /boot/vmlinuz-*-amd64 >/dev/null 2>&1 || need="$need linux-image-amd64"
have iperf3        || need="$need iperf3"
# bpf's BenchmarkACLVethDrop compares the XDP ACL with an iptables drop.
have iptables      || need="$need iptables"
# make test-compose: a Docker engine and Compose (Debian's packages; no
# registry is needed, every image is built locally).
have dockerd       || need="$need docker.io"
have docker-compose || docker compose version >/dev/null 2>&1 || need="$need docker-compose"
have systemd-analyze || need="$need systemd"
# swctl's completion scripts are parsed (zsh) and driven (bash, fish).
have zsh           || need="$need zsh"
have fish          || need="$need fish"

if [ -n "$need" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: missing:$need (run as root to install them)" >&2
		exit 0
	fi
	echo "install-deps: installing:$need"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $need >/dev/null
fi

# Start the Docker engine when it is installed but not running (a machine
# without systemd as PID 1 does not start it); a running one is left alone.
# Started here it leaves the host's firewall, forwarding and links alone
# (no docker0, no iptables rules): make test-compose needs no bridge network,
# and the other suites judge the kernel.
if [ "$(id -u)" = 0 ] && have dockerd && ! docker info >/dev/null 2>&1; then
	if [ -d /run/systemd/system ]; then
		systemctl start docker || true
	else
		echo "install-deps: starting dockerd (log /var/log/switchyard-dockerd.log)"
		setsid dockerd --bridge=none --iptables=false --ip-forward=false \
			>/var/log/switchyard-dockerd.log 2>&1 </dev/null &
	fi
	i=0
	while ! docker info >/dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -gt 60 ]; then
			echo "install-deps: dockerd did not answer in 30 s; see /var/log/switchyard-dockerd.log" >&2
			break
		fi
		sleep 0.5
	done
fi
