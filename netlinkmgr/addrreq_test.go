package netlinkmgr

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzParseAddrMsg: any bytes parse without panicking (the address
// socket's reader hands parseAddrMsg every RTM_NEWADDR/RTM_DELADDR payload
// as it comes), and a request appendAddrMsg encodes parses back to its
// link, prefix and protocol.
func FuzzParseAddrMsg(f *testing.F) {
	for _, a := range []AddrInfo{
		{Prefix: netip.MustParsePrefix("10.0.0.1/24"), Protocol: ProtoSwitchyard},
		{Prefix: netip.MustParsePrefix("10.0.0.1/32")},
		{Prefix: netip.MustParsePrefix("2001:db8::1/64"), Protocol: ProtoSwitchyard},
	} {
		f.Add(appendAddrMsg(nil, 1, 7, &a, true)[unix.SizeofNlMsghdr:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		parseAddrMsg(b)
	})
}

func TestParseAddrMsgRoundTrip(t *testing.T) {
	for _, a := range []AddrInfo{
		{Prefix: netip.MustParsePrefix("10.0.0.1/24"), Protocol: ProtoSwitchyard},
		{Prefix: netip.MustParsePrefix("192.0.2.7/31")},
		{Prefix: netip.MustParsePrefix("2001:db8::1/64"), Protocol: ProtoSwitchyard},
	} {
		got, ok := parseAddrMsg(appendAddrMsg(nil, 1, 7, &a, true)[unix.SizeofNlMsghdr:])
		if !ok || got.index != 7 || got.prefix != a.Prefix || got.protocol != a.Protocol {
			t.Errorf("%v: parsed %+v (ok %v)", a, got, ok)
		}
	}
}
