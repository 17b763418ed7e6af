package schema

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"
)

// trafficOK are TRAFFIC_GEN inputs with their canonical fields.
var trafficOK = []struct {
	key  string
	f    Fields
	want Fields
}{
	{"Ethernet0|bg", Fields{"rate": "10000pps"}, Fields{"rate": "10000pps"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "size": "64"}, Fields{"rate": "1000pps"}},
	{"Ethernet0|bg", Fields{"rate": "1.5Mpps"}, Fields{"rate": "1500000pps"}},
	{"Ethernet0|bg", Fields{"rate": "100mbit", "size": "uniform 64-1500"}, Fields{"rate": "100mbit", "size": "uniform 64-1500"}},
	{"Ethernet0|bg", Fields{"rate": "1000000", "size": "imix"}, Fields{"rate": "1mbit", "size": "imix"}},
	{"eth1|v6.a-b_c", Fields{"rate": "1kpps", "src": "2001:db8::1", "proto": "tcp", "dport": "80", "size": "78"},
		Fields{"rate": "1000pps", "src": "2001:db8::1", "proto": "tcp", "dport": "80", "size": "78"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "src_mac": "02-00-00-00-00-01", "dst_mac": "FF:FF:FF:FF:FF:FF",
		"dst": "10.0.0.2", "sport": "0", "dport": "09", "vlan": "100", "dscp": "46"},
		Fields{"rate": "1000pps", "src_mac": "02:00:00:00:00:01", "dst_mac": "ff:ff:ff:ff:ff:ff",
			"dst": "10.0.0.2", "sport": "0", "dport": "9", "vlan": "100", "dscp": "46"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "pattern": "bursty", "on": "100ms", "off": "0.9s"},
		Fields{"rate": "1000pps", "pattern": "bursty", "on": "100ms", "off": "900ms"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "pattern": "poisson", "seed": "7", "duration": "10s", "count": "5000", "path": "packet"},
		Fields{"rate": "1000pps", "pattern": "poisson", "seed": "7", "duration": "10s", "count": "5000", "path": "packet"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "pattern": "constant", "path": "auto", "proto": "udp", "NULL": "NULL"},
		Fields{"rate": "1000pps"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "proto": "icmp", "src": "2001:2::5", "size": "66"},
		Fields{"rate": "1000pps", "proto": "icmp", "src": "2001:2::5", "size": "66"}},
}

// trafficErr are TRAFFIC_GEN inputs with fragments the error must hold.
var trafficErr = []struct {
	key  string
	f    Fields
	want []string
}{
	{"Ethernet0", Fields{"rate": "1kpps"}, []string{"TRAFFIC_GEN|Ethernet0: key", "exactly two parts"}},
	{"Ethernet0|a b", Fields{"rate": "1kpps"}, []string{"stream name cannot contain ' '"}},
	{"Ethernet0|bg", Fields{}, []string{`field "rate": rate is required`}},
	{"Ethernet0|bg", Fields{"rate": "fast"}, []string{`field "rate": "fast" is not valid`, "10000pps"}},
	{"Ethernet0|bg", Fields{"rate": "0pps"}, []string{`field "rate"`}},
	{"Ethernet0|bg", Fields{"rate": "1.5pps"}, []string{`field "rate"`}},
	{"Ethernet0|bg", Fields{"rate": "2gpps"}, []string{`field "rate"`}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "size": "63"}, []string{`field "size"`, "64-9216"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "size": "9217"}, []string{`field "size"`}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "size": "uniform 1500-64"}, []string{`field "size"`, "uniform MIN-MAX"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "size": "imix2"}, []string{`field "size"`, "imix"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "src": "2001:2::1"}, []string{`field "size"`, "IPv6 UDP needs at least 66 bytes"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "size": "imix", "dst": "2001:2::1", "vlan": "5"}, []string{"802.1Q IPv6 UDP needs at least 70"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "src_mac": "01:00:5e:00:00:01"}, []string{`field "src_mac"`, "cannot be multicast"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "dst_mac": "zz"}, []string{`field "dst_mac"`}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "src": "10.0.0.0/24"}, []string{`field "src"`}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "src": "10.0.0.1", "dst": "2001:2::1"}, []string{`field "dst"`, "different address families"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "proto": "sctp"}, []string{`field "proto"`, "udp, tcp or icmp"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "proto": "icmp", "dport": "9"}, []string{`field "dport"`, "ports need proto udp or tcp"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "sport": "65536"}, []string{`field "sport"`}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "vlan": "4095"}, []string{`field "vlan"`, "1-4094"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "dscp": "64"}, []string{`field "dscp"`, "0-63"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "pattern": "wave"}, []string{`field "pattern"`, "constant, bursty"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "pattern": "bursty", "on": "1s"}, []string{`field "off"`, "needs on and off"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "on": "1s"}, []string{`field "on"`, "needs pattern bursty"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "pattern": "bursty", "on": "0s", "off": "1s"}, []string{`field "on"`, "more than 0"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "duration": "10"}, []string{`field "duration"`, "10s"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "duration": "31d"}, []string{`field "duration"`}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "count": "0"}, []string{`field "count"`, ">= 1"}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "seed": "-1"}, []string{`field "seed"`}},
	{"Ethernet0|bg", Fields{"rate": "1kpps", "path": "dpdk"}, []string{`field "path"`, "auto"}},
}

func TestParseTrafficGen(t *testing.T) {
	for _, c := range trafficOK {
		r, err := Parse(TableTrafficGen, c.key, c.f)
		if err != nil {
			t.Errorf("%s %v: %v", c.key, c.f, err)
			continue
		}
		if got := r.Fields(); !maps.Equal(got, c.want) {
			t.Errorf("%s %v: fields %v, want %v", c.key, c.f, got, c.want)
		}
		checkRoundTrip(t, TableTrafficGen, c.key, c.f)
	}
	for _, c := range trafficErr {
		_, err := Parse(TableTrafficGen, c.key, c.f)
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s %v: error %v, want a *FieldError", c.key, c.f, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %v: %q does not contain %q", c.key, c.f, err, w)
			}
		}
	}
}

func TestTrafficGenDefaults(t *testing.T) {
	r, err := ParseTrafficGen("Ethernet0|bg", Fields{"rate": "10mbit", "pattern": "bursty", "on": "1ms", "off": "2ms"})
	if err != nil {
		t.Fatal(err)
	}
	src, dst := r.Addrs()
	sp, dp := r.Ports()
	if src != DefaultSrc4 || dst != DefaultDst4 || sp != DefaultSport || dp != DefaultDport || !r.RateBits ||
		r.Rate != 10e6 || r.On != time.Millisecond || r.Off != 2*time.Millisecond || r.HeaderLen() != 46 {
		t.Errorf("defaults: %+v", r)
	}
	if KnownFields(TableTrafficGen) == nil || len(UnknownFields(TableTrafficGen, Fields{"rate": "1", "rat": "2"})) != 1 {
		t.Errorf("field policy does not know TRAFFIC_GEN")
	}
}

// FuzzParseTrafficGen: every TRAFFIC_GEN input is refused precisely or
// accepted in a canonical form that parses back to itself.
func FuzzParseTrafficGen(f *testing.F) {
	for _, c := range trafficOK {
		f.Add(TableTrafficGen, c.key, encodeFields(c.f))
	}
	for _, c := range trafficErr {
		f.Add(TableTrafficGen, c.key, encodeFields(c.f))
	}
	f.Fuzz(func(t *testing.T, _, key, fields string) {
		checkRoundTrip(t, TableTrafficGen, key, decodeFields(fields))
	})
}
