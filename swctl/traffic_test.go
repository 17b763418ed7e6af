package swctl

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

func TestConfigTraffic(t *testing.T) {
	h := newHarness(t)
	h.ok("config", "traffic", "add", "Ethernet0", "bg1", "rate", "10kpps", "size", "64")
	h.wantHash("TRAFFIC_GEN|Ethernet0|bg1", map[string]string{"rate": "10000pps", "size": "64"})
	h.ok("config", "traffic", "add", "Ethernet0", "bg2", "--rate", "1kpps", "pattern", "bursty", "on", "10ms", "--off", "90ms", "src-mac", "02:00:00:00:00:01")
	h.wantHash("TRAFFIC_GEN|Ethernet0|bg2", map[string]string{"rate": "1000pps", "pattern": "bursty", "on": "10ms", "off": "90ms", "src_mac": "02:00:00:00:00:01"})
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"config", "traffic", "add", "Ethernet0", "x", "rate", "fast"}, ExitRuntime, `TRAFFIC_GEN|Ethernet0|x: field "rate": "fast" is not valid`},
		{[]string{"config", "traffic", "add", "Ethernet0", "x", "size", "64"}, ExitRuntime, `rate is required`},
		{[]string{"config", "traffic", "add", "Ethernet0", "x", "rate"}, ExitUsage, `field "rate" has no value`},
		{[]string{"config", "traffic", "add", "Ethernet0", "x", "rat", "1kpps"}, ExitUsage, `unknown field "rat"`},
		{[]string{"config", "traffic", "add", "Ethernet0", "x", "--rate", "1kpps", "rate", "2kpps"}, ExitUsage, `given twice`},
		{[]string{"config", "traffic", "add", "Ethernet0"}, ExitUsage, `want PORT STREAM`},
	} {
		if errs := h.fails(c.code, c.args...); !strings.Contains(errs, c.want) {
			t.Errorf("swctl %s: stderr %q lacks %q", strings.Join(c.args, " "), errs, c.want)
		}
	}
	if len(h.hash("TRAFFIC_GEN|Ethernet0|x")) != 0 {
		t.Errorf("a refused stream was written")
	}

	h.setState("TRAFFIC_GEN_TABLE|Ethernet0|bg1", "state", "ok", "status", "running", "path", "xdp")
	h.ctr.HSet(t.Context(), "TRAFFIC_GEN_COUNTERS:Ethernet0|bg1", "packets", "30000", "bytes", "1920000", "pps", "10000.0",
		"bps", "5120000", "avg_pps", "9999.9", "elapsed", "3.000", "dropped", "0", "late", "0", "generation", "abcd")
	out := h.ok("show", "traffic")
	for _, w := range []string{"STREAM", "bg1", "rate=10000pps size=64", "running", "xdp", "30000", "10000.0", "bg2"} {
		if !strings.Contains(out, w) {
			t.Errorf("show traffic lacks %q:\n%s", w, out)
		}
	}
	out = h.ok("show", "traffic", "--counters")
	for _, w := range []string{"PACKETS", "AVG_PPS", "LATE", "1920000"} {
		if !strings.Contains(out, w) {
			t.Errorf("show traffic --counters lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "abcd") {
		t.Errorf("show traffic --counters shows the generation:\n%s", out)
	}

	// Completion: stream names for del, fields and values for add.
	for _, c := range []struct {
		words []string
		want  string
	}{
		{[]string{"config", "traffic", "del", "Ethernet0", ""}, "bg2"},
		{[]string{"config", "traffic", "add", "Ethernet0", "n", ""}, "pattern"},
		{[]string{"config", "traffic", "add", "Ethernet0", "n", "pattern", ""}, "poisson"},
		{[]string{"config", "traffic", "add", "Ethernet0", "n", "pattern", "poisson", "pa"}, "path"},
	} {
		var out bytes.Buffer
		Run(context.Background(), append([]string{completeVerb, "--redis", h.srv.URL()}, c.words...), &out, &bytes.Buffer{})
		if !slices.Contains(strings.Split(strings.TrimSpace(out.String()), "\n"), c.want) {
			t.Errorf("complete %q: %q lacks %q", c.words, out.String(), c.want)
		}
	}

	// save covers the table; del removes it.
	if out := h.ok("config", "save", "-"); !strings.Contains(out, `"TRAFFIC_GEN"`) || !strings.Contains(out, `"Ethernet0|bg2"`) {
		t.Errorf("config save lacks TRAFFIC_GEN:\n%s", out)
	}
	h.ok("config", "traffic", "del", "Ethernet0", "bg1")
	if len(h.hash("TRAFFIC_GEN|Ethernet0|bg1")) != 0 {
		t.Errorf("del left the stream")
	}
}
