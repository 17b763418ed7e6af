package netlinkmgr

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Socket filters of the event readers: classic BPF programs the kernel
// runs on each notification before it queues it for us, so a dropped
// event costs no copy, no wake-up of our reader and no decoding. The
// program sees the netlink message: struct nlmsghdr (len u32 at 0, type
// u16 at 4, flags, seq u32 at 8, pid u32 at 12), then the route's struct
// rtmsg (family at 16, dst_len, src_len, tos, table at 20, protocol at 21,
// scope, type). Loads read big-endian and the header is in host order,
// hence the constants go through be32/be16.

// rtprotKernel is RTPROT_KERNEL, the protocol of the routes the kernel
// makes itself (the local, broadcast and prefix routes of an address).
const rtprotKernel = 2

// rtTableLocal is RT_TABLE_LOCAL (255), the table of the local and
// broadcast routes of the addresses of ports outside a VRF.
const rtTableLocal = 255

// filterIns is one instruction of a program being assembled: jt and jf
// name labels ("" = the next instruction).
type filterIns struct {
	code   uint16
	k      uint32
	jt, jf string
	label  string // this instruction's
}

// assemble resolves the labels of prog into relative jumps.
func assemble(prog []filterIns) []unix.SockFilter {
	at := map[string]int{}
	for i, p := range prog {
		if p.label != "" {
			at[p.label] = i
		}
	}
	rel := func(pc int, l string) uint8 {
		if l == "" {
			return 0
		}
		return uint8(at[l] - pc - 1)
	}
	out := make([]unix.SockFilter, len(prog))
	for i, p := range prog {
		out[i] = unix.SockFilter{Code: p.code, K: p.k, Jt: rel(i, p.jt), Jf: rel(i, p.jf)}
	}
	return out
}

func be32(v uint32) uint32 {
	var b [4]byte
	native.PutUint32(b[:], v)
	return binary.BigEndian.Uint32(b[:])
}

func be16(v uint16) uint32 {
	var b [2]byte
	native.PutUint16(b[:], v)
	return uint32(binary.BigEndian.Uint16(b[:]))
}

// rtTableMain is RT_TABLE_MAIN (254), the table of the prefix routes of
// the addresses of ports outside a VRF.
const rtTableMain = 254

// eventFilter is the socket filter of an event reader: with pid not 0 it
// drops the events of our own quiet writes (nlmsg_pid is pid, the
// writer's port id, which the kernel puts in the event of a request, and
// nlmsg_seq lacks seqHeard: OmitOwnRouteWrites, OmitOwnAddrWrites); with
// omitLocal it drops the route messages of table local (255) whose
// protocol is kernel (OmitKernelLocalRoutes): the local and broadcast
// routes the kernel adds and removes with each address of a port outside
// a VRF; with omitPrefix it drops the IPv4 route messages of table main
// (254) whose protocol is kernel, scope link and type unicast
// (OmitKernelPrefixRoutes): the prefix route of each such address. Every
// other message passes whole. nil when it would drop nothing.
func eventFilter(pid uint32, omitLocal, omitPrefix bool) []unix.SockFilter {
	const (
		ldw  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		ldh  = unix.BPF_LD | unix.BPF_H | unix.BPF_ABS
		ldb  = unix.BPF_LD | unix.BPF_B | unix.BPF_ABS
		ldl  = unix.BPF_LD | unix.BPF_W | unix.BPF_LEN
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		rtm  = unix.SizeofNlMsghdr // the rtmsg's offset
	)
	if pid == 0 && !omitLocal && !omitPrefix {
		return nil
	}
	var prog []filterIns
	if omitLocal || omitPrefix {
		// A load past the end would drop the message: check the length
		// (the header and the rtmsg) first.
		prog = append(prog,
			filterIns{code: ldl},
			filterIns{code: jge, k: rtm + unix.SizeofRtMsg, jf: "echo"},
			filterIns{code: ldh, k: 4}, // nlmsg_type
			filterIns{code: jeq, k: be16(unix.RTM_NEWROUTE), jt: "route"},
			filterIns{code: jeq, k: be16(unix.RTM_DELROUTE), jf: "echo"},
			filterIns{code: ldb, k: rtm + 5, label: "route"}, // rtm_protocol
			filterIns{code: jeq, k: rtprotKernel, jf: "echo"},
			filterIns{code: ldb, k: rtm + 4}, // rtm_table
		)
		switch {
		case omitLocal && omitPrefix:
			prog = append(prog,
				filterIns{code: jeq, k: rtTableLocal, jt: "drop"},
				filterIns{code: jeq, k: rtTableMain, jf: "echo"})
		case omitLocal:
			prog = append(prog, filterIns{code: jeq, k: rtTableLocal, jt: "drop", jf: "echo"})
		default:
			prog = append(prog, filterIns{code: jeq, k: rtTableMain, jf: "echo"})
		}
		if omitPrefix {
			prog = append(prog,
				filterIns{code: ldb, k: rtm}, // rtm_family
				filterIns{code: jeq, k: unix.AF_INET, jf: "echo"},
				filterIns{code: ldb, k: rtm + 6}, // rtm_scope
				filterIns{code: jeq, k: unix.RT_SCOPE_LINK, jf: "echo"},
				filterIns{code: ldb, k: rtm + 7}, // rtm_type
				filterIns{code: jeq, k: unix.RTN_UNICAST, jt: "drop", jf: "echo"},
			)
		}
	}
	if pid != 0 {
		prog = append(prog,
			filterIns{code: ldw, k: 12, label: "echo"}, // nlmsg_pid
			filterIns{code: jeq, k: be32(pid), jf: "pass"},
			filterIns{code: ldw, k: 8}, // nlmsg_seq
			filterIns{code: jset, k: be32(seqHeard), jt: "pass", jf: "drop"},
		)
	} else {
		prog = append(prog, filterIns{code: ret, k: 0xffffffff, label: "echo"})
	}
	prog = append(prog,
		filterIns{code: ret, k: 0, label: "drop"},
		filterIns{code: ret, k: 0xffffffff, label: "pass"},
	)
	return assemble(prog)
}
