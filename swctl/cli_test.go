package swctl

import (
	"flag"
	"io"
	"slices"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	for _, c := range []struct {
		args     []string
		pos      []string
		untagged bool
	}{
		{[]string{"100", "Ethernet0", "--untagged"}, []string{"100", "Ethernet0"}, true},
		{[]string{"--untagged", "100", "Ethernet0"}, []string{"100", "Ethernet0"}, true},
		{[]string{"100", "--untagged", "Ethernet0"}, []string{"100", "Ethernet0"}, true},
		{[]string{"100", "--", "--untagged"}, []string{"100", "--untagged"}, false},
		{nil, nil, false},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		u := fs.Bool("untagged", false, "")
		pos, err := parseInterspersed(fs, c.args)
		if err != nil || !slices.Equal(pos, c.pos) || *u != c.untagged {
			t.Errorf("parseInterspersed(%q) = %q, untagged %v, %v; want %q, %v", c.args, pos, *u, err, c.pos, c.untagged)
		}
	}
}

func TestVlanName(t *testing.T) {
	for in, want := range map[string]string{"100": "Vlan100", "Vlan4094": "Vlan4094", "1": "Vlan1"} {
		if got, err := vlanName(in); err != nil || got != want {
			t.Errorf("vlanName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"0", "4095", "Vlan", "vlan100", "0100", "x", "-1"} {
		if got, err := vlanName(bad); err == nil {
			t.Errorf("vlanName(%q) = %q, want an error", bad, got)
		}
	}
}

func TestLossPercent(t *testing.T) {
	for _, c := range []struct {
		h    map[string]string
		want string
	}{
		{map[string]string{"rx_packets": "200", "dropped_loss": "40", "dropped_rate": "10"}, "25.00"},
		{map[string]string{"rx_packets": "0", "dropped_loss": "0"}, ""},
		{map[string]string{}, ""},
	} {
		if got := lossPercent(c.h); got != c.want {
			t.Errorf("lossPercent(%v) = %q, want %q", c.h, got, c.want)
		}
	}
}
