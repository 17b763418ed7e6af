package schema

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseImpairmentValid(t *testing.T) {
	seed := uint64(42)
	for _, tc := range []struct {
		key  string
		in   Fields
		want ImpairmentProfile
	}{
		{"Ethernet0", Fields{"loss": "10"}, ImpairmentProfile{Loss: 10, LossModel: LossRandom}},
		{"Ethernet0", Fields{"loss": "0.25", "seed": "42"}, ImpairmentProfile{Loss: 0.25, LossModel: LossRandom, Seed: &seed}},
		{"eth1", Fields{"loss_model": "gilbert", "ge_p": "1", "ge_r": "25"},
			ImpairmentProfile{LossModel: LossGilbert, GEP: 1, GER: 25, GELossBad: 100}},
		{"eth1", Fields{"loss_model": "gilbert", "ge_p": "1", "ge_r": "25", "ge_loss_good": "0.5", "ge_loss_bad": "80"},
			ImpairmentProfile{LossModel: LossGilbert, GEP: 1, GER: 25, GELossGood: 0.5, GELossBad: 80}},
		{"eth1", Fields{"loss_model": "periodic", "period": "7"}, ImpairmentProfile{LossModel: LossPeriodic, Period: 7}},
		{"eth1", Fields{"rate": "100mbit"}, ImpairmentProfile{LossModel: LossRandom, Rate: 100e6}},
		{"eth1", Fields{"rate": "1.5gbit", "burst": "64kb"}, ImpairmentProfile{LossModel: LossRandom, Rate: 1.5e9, Burst: 65536}},
		{"eth1", Fields{"rate": "10mbps"}, ImpairmentProfile{LossModel: LossRandom, Rate: 80e6}},
		{"eth1", Fields{"corrupt": "1", "NULL": "NULL"}, ImpairmentProfile{LossModel: LossRandom, Corrupt: 1}},
		{"eth1", Fields{"NULL": "NULL"}, ImpairmentProfile{LossModel: LossRandom}},
		{"eth1", Fields{"delay": "50ms"}, ImpairmentProfile{LossModel: LossRandom, EDT: EDTProfile{Delay: 50 * time.Millisecond}}},
		{"eth1", Fields{"delay": "10ms", "jitter": "2ms", "jitter_distribution": "normal", "reorder": "true", "loss": "1"},
			ImpairmentProfile{LossModel: LossRandom, Loss: 1, EDT: EDTProfile{Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, Distribution: JitterNormal, Reorder: true}}},
		{"eth1", Fields{"shape": "100mbit", "shape_limit": "64kb"}, ImpairmentProfile{LossModel: LossRandom, EDT: EDTProfile{Shape: 100e6, ShapeLimitBytes: 65536}}},
		{"eth1", Fields{"shape": "1gbit", "shape_limit": "20ms", "rate": "2gbit"}, ImpairmentProfile{LossModel: LossRandom, Rate: 2e9, EDT: EDTProfile{Shape: 1e9, ShapeLimitTime: 20 * time.Millisecond}}},
		// netem's remaining models
		{"eth1", Fields{"loss": "10", "loss_corr": "25"}, ImpairmentProfile{LossModel: LossRandom, Loss: 10, LossCorr: 25}},
		{"eth1", Fields{"loss_model": "state", "p13": "2"}, ImpairmentProfile{LossModel: LossState, P13: 2, P31: 98, P23: 100}},
		{"eth1", Fields{"loss_model": "state", "p13": "3", "p31": "30", "p32": "20", "p23": "40", "p14": "1"},
			ImpairmentProfile{LossModel: LossState, P13: 3, P31: 30, P32: 20, P23: 40, P14: 1}},
		{"eth1", Fields{"loss_model": "state", "p13": "5", "p31": "50", "p32": "10"},
			ImpairmentProfile{LossModel: LossState, P13: 5, P31: 50, P32: 10, P23: 100}},
		{"eth1", Fields{"duplicate": "1.5", "seed": "42"}, ImpairmentProfile{LossModel: LossRandom, Duplicate: 1.5, Seed: &seed}},
		{"eth1", Fields{"slot": "800us 1ms", "slot_packets": "32", "slot_bytes": "64kb"},
			ImpairmentProfile{LossModel: LossRandom, EDT: EDTProfile{SlotMin: 800 * time.Microsecond, SlotMax: time.Millisecond, SlotPackets: 32, SlotBytes: 65536}}},
		{"eth1", Fields{"slot": "2ms"}, ImpairmentProfile{LossModel: LossRandom, EDT: EDTProfile{SlotMin: 2 * time.Millisecond, SlotMax: 2 * time.Millisecond}}},
		{"eth1", Fields{"slot": "2ms 500us", "slot_distribution": "normal", "slot_packets": "4"},
			ImpairmentProfile{LossModel: LossRandom, EDT: EDTProfile{SlotDist: JitterNormal, SlotDelay: 2 * time.Millisecond, SlotJitter: 500 * time.Microsecond, SlotPackets: 4}}},
		{"eth1", Fields{"loss": "0", "loss_corr": "25"}, ImpairmentProfile{LossModel: LossRandom}},
	} {
		got, err := ParseImpairment(tc.key, tc.in)
		if err != nil {
			t.Errorf("%v: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got.ImpairmentProfile, tc.want) {
			t.Errorf("%v: got %+v, want %+v", tc.in, got.ImpairmentProfile, tc.want)
		}
		again, err := ParseImpairment(got.Key(), got.Fields())
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("%v: round trip via %v: %+v, %v", tc.in, got.Fields(), again, err)
		}
	}
}

func TestParseImpairmentErrors(t *testing.T) {
	for _, tc := range []struct {
		key   string
		in    Fields
		field string
		msg   string
	}{
		{"Ethernet0", Fields{"loss": "101"}, "loss", "percentage"},
		{"Ethernet0", Fields{"loss": "-1"}, "loss", "percentage"},
		{"Ethernet0", Fields{"loss": "1e1"}, "loss", "percentage"},
		{"Ethernet0", Fields{"loss": "NaN"}, "loss", "percentage"},
		{"Ethernet0", Fields{"loss_model": "bursty"}, "loss_model", "gilbert"},
		{"Ethernet0", Fields{"loss_model": "gilbert", "ge_p": "1"}, "ge_r", "needs ge_p and ge_r"},
		{"Ethernet0", Fields{"ge_p": "1"}, "ge_p", "needs loss_model gilbert"},
		{"Ethernet0", Fields{"loss_model": "gilbert", "ge_p": "1", "ge_r": "2", "loss": "3"}, "loss", "needs loss_model random"},
		{"Ethernet0", Fields{"loss_model": "periodic"}, "period", "every Nth"},
		{"Ethernet0", Fields{"loss_model": "periodic", "period": "0"}, "period", "every Nth"},
		{"Ethernet0", Fields{"period": "3"}, "period", "needs loss_model periodic"},
		{"Ethernet0", Fields{"rate": "fast"}, "rate", "mbit"},
		{"Ethernet0", Fields{"rate": "0mbit"}, "rate", "mbit"},
		{"Ethernet0", Fields{"burst": "10kb"}, "burst", "needs rate"},
		{"Ethernet0", Fields{"rate": "1mbit", "burst": "100"}, "burst", "full-size frame"},
		{"Ethernet0", Fields{"seed": "-1"}, "seed", "64-bit"},
		{"Ethernet0", Fields{"delay": "10"}, "delay", "needs a unit"},
		{"Ethernet0", Fields{"delay": "11s"}, "delay", "at most 10s"},
		{"Ethernet0", Fields{"jitter": "-1ms"}, "jitter", "50ms"},
		{"Ethernet0", Fields{"jitter_distribution": "normal"}, "jitter_distribution", "non-zero jitter"},
		{"Ethernet0", Fields{"jitter": "1ms", "jitter_distribution": "gauss"}, "jitter_distribution", "paretonormal"},
		{"Ethernet0", Fields{"shape": "fast"}, "shape", "100mbit"},
		{"Ethernet0", Fields{"shape_limit": "1mb"}, "shape_limit", "needs shape"},
		{"Ethernet0", Fields{"reorder": "5"}, "reorder", "true or false"},
		{"Ethernet0", Fields{"loss_corr": "25"}, "loss_corr", "needs loss"},
		{"Ethernet0", Fields{"loss": "5", "loss_corr": "101"}, "loss_corr", "percentage"},
		{"Ethernet0", Fields{"loss_model": "gilbert", "ge_p": "1", "ge_r": "2", "loss_corr": "5"}, "loss_corr", "needs loss_model random"},
		{"Ethernet0", Fields{"loss_model": "state"}, "p13", "needs p13"},
		{"Ethernet0", Fields{"loss_model": "state", "p13": "x"}, "p13", "percentage"},
		{"Ethernet0", Fields{"p13": "5"}, "p13", "needs loss_model state"},
		{"Ethernet0", Fields{"loss_model": "state", "p13": "60", "p14": "50"}, "p14", "p13 + p14 exceed 100"},
		{"Ethernet0", Fields{"loss_model": "state", "p13": "5", "p31": "80", "p32": "30"}, "p32", "p31 + p32 exceed 100"},
		{"Ethernet0", Fields{"loss_model": "state", "p13": "5", "loss": "1"}, "loss", "needs loss_model random"},
		{"Ethernet0", Fields{"duplicate": "200"}, "duplicate", "percentage"},
		{"Ethernet0", Fields{"slot": "1ms 800us"}, "slot", "below MIN_DELAY"},
		{"Ethernet0", Fields{"slot": "1ms 2ms 3ms"}, "slot", "MIN_DELAY [MAX_DELAY]"},
		{"Ethernet0", Fields{"slot": "0ms"}, "slot", "more than 0"},
		{"Ethernet0", Fields{"slot": "5"}, "slot", "needs a unit"},
		{"Ethernet0", Fields{"slot_packets": "5"}, "slot_packets", "needs slot"},
		{"Ethernet0", Fields{"slot": "1ms", "slot_packets": "0"}, "slot_packets", "packets per slot"},
		{"Ethernet0", Fields{"slot": "1ms", "slot_bytes": "lots"}, "slot_bytes", "bytes per slot"},
		{"Ethernet0", Fields{"slot_distribution": "normal"}, "slot_distribution", "needs slot"},
		{"Ethernet0", Fields{"slot": "2ms 1ms", "slot_distribution": "uniform"}, "slot_distribution", "normal, pareto or paretonormal"},
		{"Ethernet0", Fields{"slot": "2ms", "slot_distribution": "pareto"}, "slot", "DELAY JITTER"},
		{"Ethernet0", Fields{"slot": "2ms 0ms", "slot_distribution": "pareto"}, "slot", "JITTER must be more than 0"},
		{"", Fields{"loss": "5"}, "", "empty"},
		{"a|b", Fields{"loss": "5"}, "", "cannot contain"},
	} {
		_, err := ParseImpairment(tc.key, tc.in)
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%q %v: want a *FieldError, got %v", tc.key, tc.in, err)
			continue
		}
		if fe.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q %v: got field %q, error %q; want field %q and %q", tc.key, tc.in, fe.Field, err, tc.field, tc.msg)
		}
	}
}

func TestParseImpairmentFlow(t *testing.T) {
	r, err := ParseImpairmentFlow("Ethernet0|video", Fields{
		"src": "10.0.0.0/8", "dst": "192.0.2.1", "proto": "UDP", "sport": "1000-2000", "dport": "5004",
		"dscp": "46", "vlan": "100", "priority": "10", "scope": "flow", "loss": "2",
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Port != "Ethernet0" || r.Name != "video" || r.Src.String() != "10.0.0.0/8" || r.Dst.String() != "192.0.2.1/32" ||
		r.Proto != 17 || r.Sport != (PortRange{true, 1000, 2000}) || r.Dport != (PortRange{true, 5004, 5004}) ||
		r.DSCP != 46 || r.VLAN != 100 || r.Priority != 10 || r.Scope != ScopeFlow || r.Loss != 2 || r.Family() != 4 {
		t.Fatalf("parsed %+v", r)
	}
	again, err := ParseImpairmentFlow(r.Key(), r.Fields())
	if err != nil || !reflect.DeepEqual(again, r) {
		t.Fatalf("round trip via %v: %+v, %v", r.Fields(), again, err)
	}
	def, err := ParseImpairmentFlow("Ethernet0|any", Fields{"NULL": "NULL"})
	if err != nil || def.Proto != -1 || def.DSCP != -1 || def.Scope != ScopeRule || def.Impairs() {
		t.Fatalf("defaults: %+v, %v", def, err)
	}
	// Delay, jitter, shaping and reordering per class: the same parser
	// (and the same values) as IMPAIRMENT.
	cls, err := ParseImpairmentFlow("Ethernet0|ping", Fields{"proto": "icmp", "delay": "50ms", "jitter": "5ms",
		"jitter_distribution": "normal", "shape": "10mbit", "shape_limit": "20ms", "reorder": "true"})
	if err != nil {
		t.Fatal(err)
	}
	port, err := ParseImpairment("Ethernet0", Fields{"delay": "50ms", "jitter": "5ms",
		"jitter_distribution": "normal", "shape": "10mbit", "shape_limit": "20ms", "reorder": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if !cls.EDT.Active() || cls.EDT != port.EDT || cls.Impairs() {
		t.Fatalf("per-class EDT %+v, per-port %+v", cls.EDT, port.EDT)
	}
	if again, err := ParseImpairmentFlow(cls.Key(), cls.Fields()); err != nil || !reflect.DeepEqual(again, cls) {
		t.Fatalf("round trip via %v: %+v, %v", cls.Fields(), again, err)
	}
	if rec, err := Parse(TableImpairmentFlow, "Ethernet0|v6", Fields{"dst": "2001:db8::/32", "proto": "icmpv6"}); err != nil || rec.Table() != TableImpairmentFlow {
		t.Fatalf("Parse dispatch: %v %v", rec, err)
	}

	for _, tc := range []struct {
		key   string
		in    Fields
		field string
		msg   string
	}{
		{"Ethernet0", Fields{}, "", "two parts"},
		{"Ethernet0|a b", Fields{}, "", "cannot contain"},
		{"Ethernet0|x", Fields{"src": "10.0.0.1/8"}, "src", "use 10.0.0.0/8"},
		{"Ethernet0|x", Fields{"src": "10.0.0.0/8", "dst": "2001:db8::/32"}, "dst", "families"},
		{"Ethernet0|x", Fields{"src": "::ffff:10.0.0.1"}, "src", "IPv4-mapped"},
		{"Ethernet0|x", Fields{"dst": "2001:db8::/32", "proto": "icmp"}, "proto", "family"},
		{"Ethernet0|x", Fields{"proto": "256"}, "proto", "0-255"},
		{"Ethernet0|x", Fields{"proto": "icmp", "dport": "80"}, "dport", "tcp or udp"},
		{"Ethernet0|x", Fields{"dport": "80"}, "dport", "tcp or udp"},
		{"Ethernet0|x", Fields{"proto": "tcp", "dport": "90-80"}, "dport", "N-M"},
		{"Ethernet0|x", Fields{"proto": "tcp", "sport": "70000"}, "sport", "N-M"},
		{"Ethernet0|x", Fields{"dscp": "64"}, "dscp", "0-63"},
		{"Ethernet0|x", Fields{"vlan": "4095"}, "vlan", "1-4094"},
		{"Ethernet0|x", Fields{"priority": "-1"}, "priority", "0-65535"},
		{"Ethernet0|x", Fields{"scope": "port"}, "scope", "rule or flow"},
		{"Ethernet0|x", Fields{"delay": "5"}, "delay", ""},
		{"Ethernet0|x", Fields{"shape": "fast"}, "shape", ""},
		{"Ethernet0|x", Fields{"jitter_distribution": "lumpy"}, "jitter_distribution", ""},
	} {
		_, err := ParseImpairmentFlow(tc.key, tc.in)
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%q %v: want a *FieldError, got %v", tc.key, tc.in, err)
			continue
		}
		if fe.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q %v: got field %q, error %q; want field %q and %q", tc.key, tc.in, fe.Field, err, tc.field, tc.msg)
		}
	}
}

func TestRateAndSize(t *testing.T) {
	for in, want := range map[string]uint64{"1": 1, "100mbit": 1e8, "1.5Gbit": 1.5e9, "800kbit": 8e5, "1tbit": 1e12, "1kbps": 8000} {
		if got, ok := ParseRate(in); !ok || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "mbit", "1.2.3mbit", "-1mbit", "2tbit", "0x10", "1e6"} {
		if got, ok := ParseRate(in); ok {
			t.Errorf("ParseRate(%q) = %d, want an error", in, got)
		}
	}
	for r, want := range map[uint64]string{1e8: "100mbit", 1500: "1500bit", 2e12: "2tbit", 1001: "1001bit"} {
		if got := FormatRate(r); got != want {
			t.Errorf("FormatRate(%d) = %q, want %q", r, got, want)
		}
	}
	for in, want := range map[string]uint64{"1514": 1514, "32kb": 32768, "1m": 1 << 20, "1.5kb": 1536, "2000b": 2000} {
		if got, ok := ParseSize(in); !ok || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	if DefaultBurst(1e6) != 15140 || DefaultBurst(1e9) != 1250000 {
		t.Errorf("DefaultBurst: %d %d", DefaultBurst(1e6), DefaultBurst(1e9))
	}
}

// FuzzParseImpairment: any input either fails with a *FieldError or gives
// a record whose canonical fields parse back to the same record.
func FuzzParseImpairment(f *testing.F) {
	f.Add("Ethernet0", "loss", "10", "seed", "1", "rate", "1mbit")
	f.Add("Ethernet0|v", "loss_model", "gilbert", "ge_p", "1", "ge_r", "2")
	f.Add("e|v", "proto", "tcp", "dport", "1-2", "src", "10.0.0.0/8")
	f.Add("e|v", "loss_model", "periodic", "period", "3", "burst", "2kb")
	f.Add("Ethernet0", "delay", "50ms", "jitter", "5ms", "jitter_distribution", "pareto")
	f.Add("Ethernet0", "shape", "100mbit", "shape_limit", "64kb", "loss", "1")
	f.Add("Ethernet0", "shape", "1gbit", "shape_limit", "20ms", "reorder", "true")
	f.Add("Ethernet0", "delay", "1.5", "jitter", "0ms", "jitter_distribution", "normal")
	f.Add("Ethernet0", "loss", "10", "loss_corr", "25", "duplicate", "1")
	f.Add("Ethernet0|v", "loss_model", "state", "p13", "5", "p31", "30")
	f.Add("Ethernet0", "slot", "800us 1ms", "slot_packets", "8", "slot_bytes", "64kb")
	f.Add("Ethernet0", "slot", "2ms 500us", "slot_distribution", "normal", "slot_bytes", "64kb")
	f.Add("Ethernet0|v", "direction", "egress", "loss", "30", "corrupt", "1")
	f.Fuzz(func(t *testing.T, key, k1, v1, k2, v2, k3, v3 string) {
		in := Fields{k1: v1, k2: v2, k3: v3}
		for _, table := range []string{TableImpairment, TableImpairmentFlow} {
			rec, err := Parse(table, key, in)
			if err != nil {
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("%s %q %v: error is not a *FieldError: %v", table, key, in, err)
				}
				continue
			}
			again, err := Parse(table, rec.Key(), rec.Fields())
			if err != nil {
				t.Fatalf("%s %q %v: canonical %v does not parse: %v", table, key, in, rec.Fields(), err)
			}
			if !reflect.DeepEqual(again, rec) {
				t.Fatalf("%s %q %v: round trip %+v != %+v", table, key, in, again, rec)
			}
			checkRoundTrip(t, table, key, in)
		}
	})
}
