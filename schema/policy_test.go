package schema

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestUnknownFields(t *testing.T) {
	cases := []struct {
		table string
		f     Fields
		want  []string
	}{
		{TablePort, Fields{"NULL": "NULL", "mtu": "9100", "lanes": "0", "admin_stauts": "up", "zz": ""}, []string{"admin_stauts", "zz"}},
		{TablePort, Fields{"alias": "a", "speed": "1", "adv_speeds@": "1,2", "adv_speeds": "1,2"}, nil},
		{TableVlan, Fields{"dhcp_servers@": "192.0.2.1", "dhcpv6_servers@": "2001:db8::1", "description": "x"}, nil},
		{TableVlanMember, Fields{"tagging_mode": "tagged", "pvid": "1"}, []string{"pvid"}},
		{TableInterface, Fields{"family": "IPv4", "scope": "global", "secondary": "true"}, []string{"secondary"}},
		{TableVlanInterface, Fields{"family": "IPv4", "scope": "global", "secondary": "true", "proxy_arp": "enabled"}, nil},
		{TableStaticRoute, Fields{"nexthop": "", "advertise": "false", "bfd": "false", "nexthop_vrf": "default"}, []string{"nexthop_vrf"}},
		{TableFDB, Fields{"port": "Ethernet0", "type": "static", "vni": "1"}, []string{"vni"}},
		{TableImpairment, Fields{"loss": "1", "los": "5"}, []string{"los"}},
		{"DEVICE_METADATA", Fields{"hostname": "x"}, nil},
	}
	for _, c := range cases {
		if got := UnknownFields(c.table, c.f); !slices.Equal(got, c.want) {
			t.Errorf("UnknownFields(%s, %v) = %q, want %q", c.table, c.f, got, c.want)
		}
	}
	for _, table := range ConfigTables {
		known := KnownFields(table)
		// PORTCHANNEL_MEMBER takes no fields at all: an empty list, not nil.
		if known == nil || (len(known) == 0) != (table == TablePortChannelMember) || !slices.IsSorted(known) {
			t.Errorf("KnownFields(%s) = %q: want a sorted list, non-empty but for PORTCHANNEL_MEMBER", table, known)
		}
	}
}

func TestUnknownFieldsWarning(t *testing.T) {
	if w := UnknownFieldsWarning(TablePort, nil); w != "" {
		t.Errorf("no names: %q", w)
	}
	w := UnknownFieldsWarning(TablePort, []string{"admin_stauts"})
	for _, want := range []string{`unknown field "admin_stauts" ignored (did you mean "admin_status"?): PORT takes `, "admin_status, adv_interface_types,", "lanes", "mtu"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	if _, err := ParseImpairmentFlow("Ethernet0|x", Fields{"dleay": "5ms"}); err != nil {
		t.Errorf("an unknown IMPAIRMENT_FLOW field blocks the entry: %v", err)
	}
	if w := UnknownFieldsWarning(TableImpairmentFlow, UnknownFields(TableImpairmentFlow, Fields{"dleay": "5ms"})); !strings.Contains(w, `did you mean "delay"?`) {
		t.Errorf("IMPAIRMENT_FLOW warning %q", w)
	}
	if FieldsWarning(TablePort, Fields{"mtu": "1", "NULL": "NULL"}) != "" ||
		FieldsWarning(TablePort, Fields{"admin_stauts": "up"}) != UnknownFieldsWarning(TablePort, []string{"admin_stauts"}) {
		t.Error("FieldsWarning is not UnknownFieldsWarning of UnknownFields")
	}
	w = UnknownFieldsWarning(TableFDB, []string{"qqqqqq", strings.Repeat("x", 500)})
	if !strings.HasPrefix(w, `unknown fields "qqqqqq", "xxx`) || strings.Contains(w, "did you mean") ||
		!strings.Contains(w, "(500 bytes)") || !strings.HasSuffix(w, "FDB takes port, type") {
		t.Errorf("warning %q", w)
	}
}

func TestCheckKnownFields(t *testing.T) {
	if err := CheckKnownFields(TablePort, "Ethernet0", Fields{"mtu": "1500", "lanes": "1", "NULL": "NULL"}); err != nil {
		t.Fatal(err)
	}
	err := CheckKnownFields(TableVlan, "Vlan100", Fields{"vlanid": "100", "mtuu": "1500"})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "mtuu" {
		t.Fatalf("got %v", err)
	}
	want := `VLAN|Vlan100: field "mtuu": unknown field "mtuu" not allowed with --strict (did you mean "mtu"?): VLAN takes `
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want prefix %q", err, want)
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"admin_stauts", "admin_status", 1}, {"mtu", "mac", 2}, {"kitten", "sitting", 3}} {
		if d := editDistance(c.a, c.b); d != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, d, c.d)
		}
	}
}
