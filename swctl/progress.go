package swctl

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/schema"
)

// progress is a status line rewritten in place ("\r", erase line) on a
// terminal; off when the writer is not a terminal or --quiet was given, so
// scripts and logs never see it.
type progress struct {
	w    io.Writer
	on   bool
	last time.Time
}

// newProgress returns a progress line on w (the command's stderr).
func newProgress(w io.Writer, quiet bool) *progress {
	return &progress{w: w, on: !quiet && isTerminal(w)}
}

// isTerminal reports whether w is a terminal (TCGETS answers).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// show rewrites the line, at most ten times a second unless force.
func (p *progress) show(force bool, format string, a ...any) {
	if !p.on || (!force && time.Since(p.last) < 100*time.Millisecond) {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\r\x1b[K"+format, a...)
}

// clear erases the line, if one was shown.
func (p *progress) clear() {
	if p.on && !p.last.IsZero() {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.last = time.Time{}
	}
}

// applyCounts summarises statuses: entries with a final result (ok or
// error), of them in error, and still pending or without a result.
func applyCounts(sts []keyStatus) (done, failed, waiting int) {
	for _, s := range sts {
		switch {
		case !s.done():
			waiting++
		case s.State == string(schema.StateError):
			done++
			failed++
		default:
			done++
		}
	}
	return done, failed, waiting
}

// applyLine is the progress line of the daemons' work: "applied 1234/10002
// (2100/s), 8768 pending, 0 errors".
func applyLine(done, failed, total int, rate float64) string {
	return fmt.Sprintf("applied %d/%d (%.0f/s), %d pending, %d errors", done, total, rate, total-done, failed)
}

// followApply shows, on a terminal, the daemons applying what config load
// wrote, until every entry has a result or nothing moved for stall; it
// never fails the load (that is swctl wait's job) and returns at once
// when the progress line is off.
func followApply(ctx context.Context, e *Env, db *DB, p *progress, stall time.Duration) {
	if !p.on {
		return
	}
	start, moved, lastDone := time.Now(), time.Now(), -1
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		sts, err := statuses(ctx, db)
		if err != nil {
			p.clear()
			return
		}
		done, failed, _ := applyCounts(sts)
		if done != lastDone {
			lastDone, moved = done, time.Now()
		}
		p.show(true, "%s", applyLine(done, failed, len(sts), float64(done)/time.Since(start).Seconds()))
		if done == len(sts) || time.Since(moved) > stall {
			p.clear()
			if done < len(sts) {
				fmt.Fprintf(e.Stderr, "swctl: %d of %d entries not applied yet (swctl wait lists them and why)\n", len(sts)-done, len(sts))
			} else if failed > 0 {
				fmt.Fprintf(e.Stderr, "swctl: %d of %d entries failed (swctl show state --errors)\n", failed, len(sts))
			}
			return
		}
		select {
		case <-ctx.Done():
			p.clear()
			return
		case <-tick.C:
		}
	}
}
