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

if [ -z "$need" ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing:$need (run as root to install them)" >&2
	exit 0
fi
echo "install-deps: installing:$need"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $need >/dev/null
