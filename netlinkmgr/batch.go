package netlinkmgr

import (
	"errors"
	"fmt"
	"syscall"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// The batched write path. iproute2's -batch sends one request and waits
// for its acknowledgement before the next; a netlink socket takes many
// requests in one sendmsg (one buffer of nlmsghdrs, each with its own
// sequence number), the kernel handles them in order. Routes().ReplaceBatch,
// Addrs().AddBatch, Fdbs().AddBatch and BridgeVlans().AddBatch build their
// requests and send them here, on the route socket (routeSock): up to
// batchBytes per sendmsg, each answer matched to its request by sequence
// number, each error with the kernel's extended-ack reason.
//
// Only the last request of a sendmsg asks for an acknowledgement
// (NLM_F_ACK): the kernel answers a failed request whether or not it asked
// (netlink_rcv_skb acks when NLM_F_ACK is set or the handler failed), in
// order, so once the last request's answer is read every request before it
// that has no answer succeeded. The acknowledgements of successes were one
// socket buffer each for the kernel to allocate and queue and for us to
// read: 5-8% of orchagent's CPU in a burst of routes (docs/performance.md).
// A lost answer (ENOBUFS on the socket) fails every request of the sendmsg
// not answered yet, as before: none is reported done on a guess. (The
// kernel sends nothing for a handler's -EINTR, with or without NLM_F_ACK;
// the route, address, neighbour and link handlers these requests reach do
// not return it.)

const (
	// batchBytes bounds one sendmsg of a batch.
	batchBytes = 64 << 10
	// batchRcvBuf is the receive buffer asked for (SO_RCVBUFFORCE) so the
	// acknowledgements of a whole batchBytes batch fit: the kernel drops
	// those that do not (ENOBUFS on the socket).
	batchRcvBuf = 4 << 20
	// batchReqsSmallBuf bounds the requests of one sendmsg when the
	// larger buffer was refused: 64 acknowledgements fit the default.
	batchReqsSmallBuf = 64
)

// exec sends req and waits for its acknowledgement: nil, or the errno
// the kernel answered (as the library returns it).
func (r *routeSock) exec(req *nl.NetlinkRequest) error {
	return r.execBatch([]*nl.NetlinkRequest{req})[0]
}

// execBatch sends the library's requests reqs as execEncoded does (their
// sequence numbers replaced by the socket's own).
func (r *routeSock) execBatch(reqs []*nl.NetlinkRequest) []error {
	return r.execEncoded(len(reqs), func(i int, b []byte, seq uint32) []byte {
		reqs[i].Seq = seq
		return append(b, reqs[i].Serialize()...)
	}, nil)
}

// seqHeard is the bit of a request's sequence number that says its event
// is to be heard (OmitOwnRouteWrites); the kernel copies the number into
// the event it sends about the write.
const seqHeard = 1

// execEncoded sends n requests in order, as few sendmsgs as batchBytes
// (and maxReqs) allow, and returns each one's answer: nil (acknowledged),
// the errno the kernel answered (a *KernelError when it said why), or the
// error that left it unanswered (timeout, socket error). A failed request
// does not stop the ones after it: the kernel handles each on its own.
// enc appends request i, with sequence number seq, to b. quiet (nil =
// none) says which requests' events a watch with OmitOwnRouteWrites does
// not hear: their sequence numbers are even, the others' odd.
func (r *routeSock) execEncoded(n int, enc func(i int, b []byte, seq uint32) []byte, quiet func(i int) bool) []error {
	errs := make([]error, n)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.s == nil {
		for i := range errs {
			errs[i] = syscall.EBADF
		}
		return errs
	}
	for start := 0; start < n; {
		b := r.sbuf[:0]
		end := start
		// Sequence numbers from the socket's own counter (under r.mu):
		// request i of the chunk is first+2i, plus seqHeard unless quiet.
		first := (r.seq + 2) &^ seqHeard
		for end < n && (r.maxReqs == 0 || end-start < r.maxReqs) {
			at := len(b)
			seq := first + 2*uint32(end-start)
			if quiet == nil || !quiet(end) {
				seq |= seqHeard
			}
			b = enc(end, b, seq)
			if end > start && len(b) > batchBytes {
				b = b[:at] // the next sendmsg's first request
				break
			}
			end++
		}
		r.seq = first + 2*uint32(end-start-1) + seqHeard
		r.sbuf = b
		ackLastOnly(b)
		r.sendChunk(b, first, errs[start:end])
		start = end
	}
	return errs
}

// ackLastOnly clears NLM_F_ACK in every request of b but the last (see
// above: the kernel still answers each one that fails).
func ackLastOnly(b []byte) {
	for len(b) >= unix.SizeofNlMsghdr {
		l := nlmAlign(int(native.Uint32(b[0:4])))
		if l < unix.SizeofNlMsghdr || l >= len(b) {
			return // the last request (or a malformed length: left as is)
		}
		native.PutUint16(b[6:8], native.Uint16(b[6:8])&^unix.NLM_F_ACK)
		b = b[l:]
	}
}

// sendChunk sends the serialized requests b (sequence numbers first,
// first+2, ..., each maybe with seqHeard, one per errs entry; only the
// last with NLM_F_ACK, ackLastOnly) in one sendmsg and fills errs from
// the kernel's answers: a request with none before the last one's
// answer succeeded.
func (r *routeSock) sendChunk(b []byte, first uint32, errs []error) {
	acked := r.acked[:0]
	for range errs {
		acked = append(acked, false)
	}
	r.acked = acked
	fail := func(err error) {
		for i := range errs {
			if !acked[i] {
				errs[i] = err
			}
		}
	}
	deadline := time.Now().Add(requestTimeout)
	send := func() error { return sendRaw(r.fd, b) }
	if len(errs) > 1 {
		to := &unix.SockaddrNetlink{Family: unix.AF_NETLINK}
		send = func() error { return unix.Sendto(r.fd, b, 0, to) }
	}
	if err := r.retry(unix.POLLOUT, deadline, send); err != nil {
		fail(err)
		return
	}
	last := len(errs) - 1
	for !acked[last] {
		var n int
		if err := r.retry(unix.POLLIN, deadline, func() (err error) {
			n, err = recvDontWait(r.fd, r.rbuf)
			return err
		}); err != nil {
			fail(err)
			return
		}
		for m := r.rbuf[:n]; len(m) >= unix.SizeofNlMsghdr; {
			l := int(native.Uint32(m[0:4]))
			if l < unix.SizeofNlMsghdr || l > len(m) {
				fail(fmt.Errorf("netlink acknowledgement: %w", syscall.EINVAL))
				return
			}
			h := syscall.NlMsghdr{Len: uint32(l), Type: native.Uint16(m[4:6]), Flags: native.Uint16(m[6:8]),
				Seq: native.Uint32(m[8:12]), Pid: native.Uint32(m[12:16])}
			data := m[unix.SizeofNlMsghdr:l]
			m = m[min(nlmAlign(l), len(m)):]
			i := int((h.Seq - first) / 2)
			if h.Seq-first >= 2*uint32(len(errs)) || acked[i] { // the late answer of a timed-out request
				continue
			}
			if h.Type != unix.NLMSG_ERROR && h.Type != unix.NLMSG_DONE {
				continue
			}
			acked[i] = true
			if h.Type == unix.NLMSG_ERROR {
				errs[i] = ackError(h, data)
			}
		}
	}
}

func nlmAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }

// kernelAddr is the kernel's netlink address (port 0), sendRaw's destination.
var kernelAddr = unix.RawSockaddrNetlink{Family: unix.AF_NETLINK}

// sendRaw sends one request to the kernel without telling the Go
// scheduler it is in a system call (RawSyscall). The socket is
// non-blocking, so the call never waits for buffer space: it returns when
// the kernel has applied the request, in this thread. Under slow kernels
// (a TCG VM: a bond enslave takes 5-50 ms) the scheduler's monitor would
// otherwise take the P away from every such call and hand it to a fresh
// thread, polling every 20 µs while it does so: a quarter of orchagent's
// CPU in a PortChannel burst. A batch of requests (many routes) keeps
// the ordinary call (sendChunk), as it can hold the kernel longer.
func sendRaw(fd int, b []byte) error {
	_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0,
		uintptr(unsafe.Pointer(&kernelAddr)), unix.SizeofSockaddrNetlink)
	if e != 0 {
		return e
	}
	return nil
}

// recvDontWait is recvfrom(fd, buf, MSG_DONTWAIT) without the source
// address (unix.Recvfrom allocates one per call).
func recvDontWait(fd int, buf []byte) (int, error) {
	n, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
		unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// AddBatch adds every address as Add does (replace, or with Create only
// create), sending the requests many per netlink message (execBatch).
// A watch with OmitOwnAddrWrites does not hear the creates.
// Equivalent to ip -batch of address {replace|add} PREFIX dev LINK proto P.
func (x realAddrs) AddBatch(as []AddrInfo) []error {
	k := x.k
	errs := make([]error, len(as))
	idx := make([]int, 0, len(as)) // the requests' addresses
	lis := make([]int, 0, len(as)) // their links' ifindexes
	cached := make([]bool, len(as))
	drained := false
	for i, a := range as {
		if !a.Prefix.IsValid() {
			errs[i] = x.Add(a) // names the invalid prefix
			continue
		}
		k.writes.Add(1)
		li, c, err := k.ifindexOnce(a.Link, &drained)
		if err != nil {
			errs[i] = opErr("add", "address "+a.String(), err)
			continue
		}
		cached[i] = c
		idx, lis = append(idx, i), append(lis, li)
	}
	res := k.rt.execEncoded(len(idx), func(j int, b []byte, seq uint32) []byte {
		a := &as[idx[j]]
		return appendAddrMsg(b, seq, lis[j], a, a.Create)
	}, func(j int) bool { return as[idx[j]].Create }) // OmitOwnAddrWrites
	for j, err := range res {
		i := idx[j]
		a := as[i]
		switch {
		case err == nil:
		case cached[i] && isNoDevice(err):
			k.idx.forget(a.Link)
			errs[i] = x.Add(a) // looks the link up afresh
		case a.Create && errors.Is(err, unix.EEXIST):
			errs[i] = opErr("add", "address "+a.String(), fmt.Errorf("address already exists: %w", err))
		default:
			errs[i] = opErr("add", "address "+a.String(), err)
		}
	}
	return errs
}

// vlanRequest encodes v as the library's BridgeVlanAdd does (RTM_SETLINK
// AF_BRIDGE, IFLA_AF_SPEC with IFLA_BRIDGE_FLAGS self or master and
// IFLA_BRIDGE_VLAN_INFO): a group of one.
func vlanRequest(idx int, v BridgeVlanInfo) *nl.NetlinkRequest {
	return vlanGroupRequest(idx, []BridgeVlanInfo{v})
}
