#!/bin/sh
# Makes the base images docker-compose.yml builds from when no registry is
# reachable, from what the machine has, and prints the build arguments that
# select them (KEY=VALUE lines, for the environment of `docker compose build`):
#
#   GO_IMAGE=scratch RUNTIME_IMAGE=scratch BINARIES=prebuilt
#       the daemons' image is FROM scratch holding bin/ (make build; static)
#   REDIS_IMAGE=switchyard-local/redis:VERSION
#       a root filesystem of the host's Debian redis-server and redis-cli
#       and the shared libraries they load, imported once and kept (the
#       image is the cache: a second run only checks that it exists)
#
# Usage: scripts/compose-images.sh    (needs docker, redis-server, redis-cli)
set -eu

ver=$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
[ -n "$ver" ] || { echo "compose-images: cannot read redis-server --version" >&2; exit 1; }
tag="switchyard-local/redis:$ver"

if ! docker image inspect "$tag" >/dev/null 2>&1; then
	root=$(mktemp -d)
	trap 'rm -rf "$root"' EXIT
	mkdir -p "$root/usr/bin" "$root/data" "$root/tmp" "$root/etc"
	chmod 1777 "$root/tmp"
	echo 'root:x:0:0:root:/root:/usr/sbin/nologin' >"$root/etc/passwd"
	echo 'root:x:0:' >"$root/etc/group"
	for b in redis-server redis-cli; do
		p=$(command -v "$b")
		cp -L "$p" "$root/usr/bin/$b"
		# Every shared library and the loader, at the path ldd names.
		for lib in $(ldd "$p" | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^\s*\(\/[^ ]*\) .*/\1/p'); do
			mkdir -p "$root$(dirname "$lib")"
			cp -L "$lib" "$root$lib"
		done
	done
	tar -C "$root" -c . | docker import --change 'ENV PATH=/usr/bin:/bin' \
		--change 'WORKDIR /data' - "$tag" >/dev/null
	echo "compose-images: made $tag from the host's redis-server" >&2
fi

echo GO_IMAGE=scratch
echo RUNTIME_IMAGE=scratch
echo BINARIES=prebuilt
echo "REDIS_IMAGE=$tag"
