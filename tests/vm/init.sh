#!/bin/busybox sh
# PID 1 of the switchyard test VM (packed into the initramfs by vmexec).
#
# It loads the virtio/9p modules shipped in the initramfs, mounts the host's
# root filesystem (9p tag "host", read-only) on /newroot and the host's
# per-run results directory (9p tag "vmio", read-write) on /newroot/run/vmio,
# gives the guest fresh proc/sys/dev and tmpfs on /tmp, /run, /var/tmp, loads
# the networking modules the tests need, then runs /run/vmio/job.sh chrooted
# into the host root. The job's stdout, stderr and exit status land in the
# results directory; then the VM powers off. Anything that goes wrong before
# the job runs is written to /run/vmio/init-error for the host to report.

/bin/busybox mkdir -p /bin /sbin /proc /sys /dev /newroot /vmio
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t devtmpfs devtmpfs /dev
exec 0</dev/console 1>/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys

halt() {
	sync
	poweroff -f
	echo o >/proc/sysrq-trigger
	sleep 5
	exit 1 # init exiting panics the kernel; panic=-1 plus -no-reboot ends qemu
}

fail() {
	echo "vm-init: $*"
	[ -d /vmio/. ] && echo "$*" >/vmio/init-error
	halt
}

for m in $(cat /modules/order); do
	insmod "/modules/$m" || fail "insmod $m failed (see console log)"
done

mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none vmio /vmio ||
	echo "vm-init: cannot mount the results share (tag vmio)"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro host /newroot ||
	fail "cannot mount the host root share (tag host)"

R=/newroot
# A second view of the host root, kept from the tmpfs mounts below, to
# re-expose host paths under /tmp or /run that the job needs (a checkout
# under /tmp, say): the host lists them in /run/vmio/expose.
mkdir -p /hostro
mount --bind $R /hostro || fail "bind the host root to /hostro"
mount -t proc proc $R/proc || fail "mount proc"
mount -t sysfs sysfs $R/sys || fail "mount sysfs"
mount -t devtmpfs devtmpfs $R/dev || fail "mount devtmpfs"
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts $R/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm
mount -t tmpfs -o mode=1777 tmpfs $R/tmp || fail "mount tmpfs on /tmp"
mount -t tmpfs -o mode=0755 tmpfs $R/run || fail "mount tmpfs on /run"
[ -d $R/var/tmp ] && mount -t tmpfs -o mode=1777 tmpfs $R/var/tmp
mount -t bpf bpf $R/sys/fs/bpf 2>/dev/null
mount -t cgroup2 cgroup2 $R/sys/fs/cgroup 2>/dev/null
mkdir -p $R/run/netns $R/run/lock $R/run/vmio
mount --move /vmio $R/run/vmio || fail "move the results share to /run/vmio"
V=$R/run/vmio
if [ -s $V/expose ]; then
	while read -r p; do
		mkdir -p "$R$p" && mount --bind "/hostro$p" "$R$p" || fail "expose host path $p"
	done <$V/expose
fi

hostname switchyard-vm
ip link set lo up
# Modules the kernel-dependent tests need; modprobe (and the modules) come
# from the host root, which has /lib/modules for this kernel.
chroot $R /sbin/modprobe -a 8021q bridge veth dummy vrf bonding vxlan sch_netem sch_fq sch_ingress cls_bpf ||
	echo "vm-init: some modules did not load (the tests' kernelcap probes will say which)"

cut -d' ' -f1 /proc/uptime >$V/boot-uptime
if [ -f $V/job.sh ]; then
	chroot $R /bin/sh -c 'cd / && exec /bin/bash /run/vmio/job.sh' \
		</dev/null >>$V/stdout 2>>$V/stderr
	echo $? >$V/rc.tmp
	mv $V/rc.tmp $V/rc
else
	echo "vm-init: no job.sh in the results share"
fi
cut -d' ' -f1 /proc/uptime >$V/end-uptime
umount $V 2>/dev/null
halt
