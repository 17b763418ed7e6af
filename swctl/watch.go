package swctl

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"time"
)

// rateFields are the counters that get a per-second column under --watch
// (interfaces and impairment counters).
var rateFields = []string{"rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "rx_dropped", "tx_dropped",
	"passed", "dropped_loss", "dropped_rate", "corrupted", "duplicated"}

// watchView shows the view build makes every interval until ctx is done:
// on a terminal the screen is cleared and the table redrawn in place (as
// watch(1) does); otherwise each snapshot is appended under a time line.
// With counters, every counter of rateFields gets a per-second column from
// the previous snapshot, and impairment counters a live loss percent.
func watchView(ctx context.Context, w io.Writer, title string, interval time.Duration, counters bool,
	build func(ctx context.Context) (*View, error)) error {
	tty := isTerminal(w)
	var prev *View
	var prevAt time.Time
	for {
		v, err := build(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C while reading
			}
			return err
		}
		now := time.Now()
		shown := v
		if counters {
			shown = withRates(v, prev, now.Sub(prevAt))
		}
		var buf bytes.Buffer
		if tty {
			buf.WriteString("\x1b[H\x1b[2J")
		}
		fmt.Fprintf(&buf, "Every %v: %s    %s\n\n", interval, title, now.Format("15:04:05"))
		if err := shown.Write(&buf, false); err != nil {
			return err
		}
		if !tty {
			buf.WriteString("\n")
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		prev, prevAt = v, now
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// rowID names a row across snapshots: its first column and, for impairment
// counters, its rule (for traffic, its stream).
func rowID(v *View, r Row) string {
	id := ""
	if len(v.Columns) > 0 {
		id = fmt.Sprint(r[v.Columns[0].Key])
	}
	for _, k := range []string{"rule", "stream"} {
		if sub, ok := r[k]; ok {
			id += "|" + fmt.Sprint(sub)
		}
	}
	return id
}

// withRates returns v with a "FIELD/S" column after each counter of
// rateFields it has (blank in the first snapshot or for a new row), and
// for impairment counters "LIVE_LOSS%": the loss over the last interval.
func withRates(v, prev *View, dt time.Duration) *View {
	old := map[string]Row{}
	if prev != nil && dt > 0 {
		for _, r := range prev.Rows {
			old[rowID(prev, r)] = r
		}
	}
	num := func(r Row, f string) (float64, bool) {
		s, ok := r[f].(string)
		if !ok {
			return 0, false
		}
		x, err := strconv.ParseFloat(s, 64)
		return x, err == nil
	}
	out := &View{}
	has := map[string]bool{}
	for _, c := range v.Columns {
		has[c.Key] = true
	}
	for _, c := range v.Columns {
		out.Columns = append(out.Columns, c)
		for _, f := range rateFields {
			if c.Key == f {
				out.Columns = append(out.Columns, Column{header(f) + "/S", f + "/s"})
			}
		}
	}
	live := has["loss_percent"]
	if live {
		out.Columns = append(out.Columns, Column{"LIVE_LOSS%", "live_loss_percent"})
	}
	for _, r := range v.Rows {
		nr := Row{}
		for k, val := range r {
			nr[k] = val
		}
		if o, ok := old[rowID(v, r)]; ok {
			for _, f := range rateFields {
				cur, ok1 := num(r, f)
				was, ok2 := num(o, f)
				if ok1 && ok2 && cur >= was {
					nr[f+"/s"] = fmt.Sprintf("%.0f", (cur-was)/dt.Seconds())
				}
			}
			if live {
				d := func(f string) float64 { c, _ := num(r, f); p, _ := num(o, f); return c - p }
				if rx := d("rx_packets"); rx > 0 {
					nr["live_loss_percent"] = fmt.Sprintf("%.2f", 100*(d("dropped_loss")+d("dropped_rate"))/rx)
				}
			}
		}
		out.Rows = append(out.Rows, nr)
	}
	return out
}
