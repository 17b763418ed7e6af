package netlinkmgr

import (
	"bytes"
	"net"
	"testing"
)

// TestAppendFdbMsgIsFdbRequest: the batch's FDB encoder writes the bytes
// of the library request the single Add sends.
func TestAppendFdbMsgIsFdbRequest(t *testing.T) {
	mac, _ := net.ParseMAC("02:00:00:01:02:03")
	for _, e := range []FdbInfo{
		{MAC: mac, Link: "Ethernet0", Master: "Bridge", Vlan: 100, Static: true},
		{MAC: mac, Link: "Ethernet0", Master: "Bridge", Static: true},
		{MAC: mac, Link: "Ethernet4", Master: "Bridge", Vlan: 4094, Static: true},
	} {
		req := fdbRequest(7, e)
		req.Seq = 41
		want := req.Serialize()
		got := appendFdbMsg([]byte{0xAA}, 41, 7, &e)
		if got[0] != 0xAA || !bytes.Equal(got[1:], want) {
			t.Errorf("%s:\n got % x\nwant % x", e.String(), got[1:], want)
		}
	}
}
