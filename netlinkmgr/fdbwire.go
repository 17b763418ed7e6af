package netlinkmgr

import "golang.org/x/sys/unix"

// appendFdbMsg appends the RTM_NEWNEIGH of a static FDB entry on the
// port with index idx, with sequence number seq, to b: the bytes
// fdbRequest's library request serializes to (TestAppendFdbMsgIsFdbRequest),
// written straight into the batch's send buffer (execEncoded) instead of
// a request object per entry. Equivalent to
// bridge fdb replace MAC dev PORT master static [vlan N].
func appendFdbMsg(b []byte, seq uint32, idx int, e *FdbInfo) []byte {
	start := len(b)
	b = native.AppendUint32(b, 0)
	b = native.AppendUint16(b, unix.RTM_NEWNEIGH)
	b = native.AppendUint16(b, unix.NLM_F_REQUEST|unix.NLM_F_CREATE|unix.NLM_F_REPLACE|unix.NLM_F_ACK)
	b = native.AppendUint32(b, seq)
	b = native.AppendUint32(b, 0)
	// struct ndmsg: family u8, pad u8, pad u16, ifindex s32, state u16,
	// flags u8, type u8.
	b = append(b, unix.AF_BRIDGE, 0, 0, 0)
	b = native.AppendUint32(b, uint32(idx))
	b = native.AppendUint16(b, unix.NUD_NOARP)
	b = append(b, unix.NTF_MASTER, 0)
	b = appendAttr(b, unix.NDA_DST, nil)
	b = appendAttr(b, unix.NDA_LLADDR, e.MAC)
	if e.Vlan != 0 {
		var v [2]byte
		native.PutUint16(v[:], e.Vlan)
		b = appendAttr(b, unix.NDA_VLAN, v[:])
	}
	native.PutUint32(b[start:], uint32(len(b)-start))
	return b
}
