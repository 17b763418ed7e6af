package swctl

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// snapshots is a writer that calls next after each snapshot --watch draws.
type snapshots struct {
	mu   sync.Mutex
	all  []string
	next func(n int)
}

func (s *snapshots) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.all = append(s.all, string(p))
	n := len(s.all)
	s.mu.Unlock()
	s.next(n)
	return len(p), nil
}

// TestShowWatchCounters: --watch redraws the counters table, the second
// snapshot with per-second rates computed from the first; Ctrl-C (the
// context) ends it with exit 0.
func TestShowWatchCounters(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.ctr.HSet(ctx, "COUNTERS:Ethernet0", "rx_packets", "100", "tx_packets", "7", "rx_bytes", "1000")
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &snapshots{next: func(n int) {
		switch n {
		case 1:
			h.ctr.HSet(ctx, "COUNTERS:Ethernet0", "rx_packets", "300")
		case 2:
			cancel()
		}
	}}
	code := Run(wctx, []string{"--redis", h.srv.URL(), "show", "interfaces", "--counters", "--watch", "--interval", "100ms"}, out, &strings.Builder{})
	if code != 0 || len(out.all) < 2 {
		t.Fatalf("show --watch: exit %d after %d snapshots", code, len(out.all))
	}
	first, second := out.all[0], out.all[1]
	for _, s := range []string{first, second} {
		if !strings.Contains(s, "Every 100ms: swctl show interfaces --counters") || !strings.Contains(s, "RX_PACKETS/S") {
			t.Errorf("snapshot lacks the title or the rate column:\n%s", s)
		}
	}
	if !strings.Contains(second, "300") {
		t.Errorf("second snapshot does not show the new counter:\n%s", second)
	}
	if strings.Contains(first, "\x1b[2J") {
		t.Errorf("not a terminal, yet the screen is cleared")
	}
	if errs := h.fails(ExitUsage, "show", "vlan", "--watch", "--json"); !strings.Contains(errs, "does not combine with --json") {
		t.Errorf("--watch --json: %s", errs)
	}
}

// TestWithRates: per-second rates and the live loss percent over the
// interval between two snapshots.
func TestWithRates(t *testing.T) {
	cols := []Column{{"PORT", "port"}, {"RULE", "rule"}, {"RX_PACKETS", "rx_packets"},
		{"DROPPED_LOSS", "dropped_loss"}, {"LOSS%", "loss_percent"}}
	prev := &View{Columns: cols, Rows: []Row{{"port": "Ethernet0", "rule": "", "rx_packets": "1000", "dropped_loss": "0", "loss_percent": "0.00"}}}
	cur := &View{Columns: cols, Rows: []Row{
		{"port": "Ethernet0", "rule": "", "rx_packets": "3000", "dropped_loss": "500", "loss_percent": "16.67"},
		{"port": "Ethernet4", "rule": "", "rx_packets": "10", "dropped_loss": "0", "loss_percent": "0.00"},
	}}
	v := withRates(cur, prev, 2*time.Second)
	r := v.Rows[0]
	if r["rx_packets/s"] != "1000" || r["dropped_loss/s"] != "250" || r["live_loss_percent"] != "25.00" {
		t.Errorf("rates of Ethernet0: %v", r)
	}
	if _, ok := v.Rows[1]["rx_packets/s"]; ok {
		t.Errorf("a row absent from the previous snapshot got a rate: %v", v.Rows[1])
	}
	var headers []string
	for _, c := range v.Columns {
		headers = append(headers, c.Header)
	}
	if got := strings.Join(headers, " "); got != "PORT RULE RX_PACKETS RX_PACKETS/S DROPPED_LOSS DROPPED_LOSS/S LOSS% LIVE_LOSS%" {
		t.Errorf("columns: %s", got)
	}
}
