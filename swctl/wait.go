package swctl

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-net/switchyard/schema"
)

// keyStatus is the outcome of one CONFIG_DB key as STATE_DB holds it.
type keyStatus struct {
	Table  string `json:"table"`
	Key    string `json:"key"`
	State  string `json:"state"` // ok, pending, error, or "" when there is no result yet
	Reason string `json:"reason"`
	// Stale: the result names an older version of the key (its generation
	// differs from the current CONFIG_DB hash's); State is then "".
	Stale bool `json:"stale,omitempty"`
}

// daemonFor names the daemon that writes the results of table.
func daemonFor(table string) string {
	if strings.HasPrefix(table, schema.TableImpairment) || table == schema.TableACLTable || table == schema.TableACLRule {
		return "impaird"
	}
	return "orchagent"
}

// statuses reads, for every CONFIG_DB key of the known tables, its result
// (schema.ResultKey) from STATE_DB, in table dependency order.
func statuses(ctx context.Context, db *DB) ([]keyStatus, error) {
	var out []keyStatus
	for _, t := range knownTables() {
		prefix := t + schema.ConfigSep
		keys, err := scanKeys(ctx, db.Config(), globEscape(prefix)+"*")
		if err != nil {
			return nil, err
		}
		if len(keys) == 0 {
			continue
		}
		for i := range keys {
			keys[i] = strings.TrimPrefix(keys[i], prefix)
		}
		sortNatural(keys)
		cmds := make([]*redis.SliceCmd, len(keys))
		_, err = db.State().Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range keys {
				cmds[i] = p.HMGet(ctx, schema.ResultKey(t, k), schema.FieldState, schema.FieldReason, schema.FieldGeneration)
			}
			return nil
		})
		if err != nil && !isWrongType(err) {
			return nil, fmt.Errorf("read STATE_DB results of %s: %w", t, err)
		}
		// The current hashes, to tell a result of this version from one
		// of the previous version (schema.Generation).
		hashes := make([]*redis.MapStringStringCmd, len(keys))
		_, err = db.Config().Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range keys {
				hashes[i] = p.HGetAll(ctx, schema.ConfigKey(t, k))
			}
			return nil
		})
		if err != nil && !isWrongType(err) {
			return nil, fmt.Errorf("read CONFIG_DB %s: %w", t, err)
		}
		for i, k := range keys {
			st := keyStatus{Table: t, Key: k}
			if vals, err := cmds[i].Result(); err == nil {
				st.State, _ = vals[0].(string)
				st.Reason, _ = vals[1].(string)
				gen, _ := vals[2].(string)
				if h, err := hashes[i].Result(); err == nil && gen != "" && st.State != "" && gen != schema.Generation(h) {
					st.State, st.Reason, st.Stale = "", "", true
				}
			}
			out = append(out, st)
		}
	}
	return out, nil
}

func (s keyStatus) done() bool {
	return s.State == string(schema.StateOK) || s.State == string(schema.StateError)
}

// line describes a key that is not ok, for humans.
func (s keyStatus) line() string {
	k := schema.ConfigKey(s.Table, s.Key)
	switch s.State {
	case "":
		if s.Stale {
			return fmt.Sprintf("%s: result is for the previous version of the entry (is %s running?)", k, daemonFor(s.Table))
		}
		return fmt.Sprintf("%s: no result yet (is %s running?)", k, daemonFor(s.Table))
	case string(schema.StateOK):
		return k + ": ok"
	}
	if s.Reason == "" {
		return k + ": " + s.State
	}
	return fmt.Sprintf("%s: %s: %s", k, s.State, s.Reason)
}

func waitCommand() *Command {
	c := &Command{
		Name:    "wait",
		Summary: "wait until the daemons have a result for every CONFIG_DB entry",
		Long: `Wait until every entry of switchyard's CONFIG_DB tables has a result in
STATE_DB (T_TABLE|key) that is not pending. Exits 0 when all are ok; prints
the entries in error and exits 1 otherwise. On timeout it prints what is still
pending (and what it waits for) or has no result at all, and exits 1.
On a terminal a progress line shows "applied N/M (rate/s), P pending, E
errors" meanwhile (not with --quiet, nor when stderr is not a terminal).`,
		Examples: []string{
			"swctl config load demo/routed.json && swctl wait",
			"swctl wait --timeout 2m",
		},
	}
	c.Setup = func(fs *flag.FlagSet) Runner {
		timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
		quiet := fs.Bool("quiet", false, "no progress line (it is shown only on a terminal)")
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(c, args, 0, 0); err != nil {
				return err
			}
			if *timeout <= 0 {
				return usagef(c, "--timeout must be positive")
			}
			db, err := e.DB()
			if err != nil {
				return err
			}
			return wait(ctx, e, db, *timeout, newProgress(e.Stderr, *quiet))
		}
	}
	return c
}

func wait(ctx context.Context, e *Env, db *DB, timeout time.Duration, p *progress) error {
	start := time.Now()
	deadline := start.Add(timeout)
	defer p.clear()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		sts, err := statuses(ctx, db)
		if err != nil {
			return err
		}
		var waiting, failed []keyStatus
		for _, s := range sts {
			switch {
			case !s.done():
				waiting = append(waiting, s)
			case s.State == string(schema.StateError):
				failed = append(failed, s)
			}
		}
		done := len(sts) - len(waiting)
		p.show(false, "%s", applyLine(done, len(failed), len(sts), float64(done)/max(time.Since(start).Seconds(), 1e-3)))
		if len(waiting) == 0 {
			p.clear()
			if len(failed) == 0 {
				fmt.Fprintf(e.Stdout, "all %d entries applied\n", len(sts))
				return nil
			}
			fmt.Fprintf(e.Stderr, "swctl wait: %d of %d entries failed:\n", len(failed), len(sts))
			for _, s := range failed {
				fmt.Fprintf(e.Stderr, "  %s\n", s.line())
			}
			return quietError{fmt.Errorf("%d entries failed", len(failed))}
		}
		if time.Now().After(deadline) {
			p.clear()
			fmt.Fprintf(e.Stderr, "swctl wait: timed out after %v: %d of %d entries not applied yet:\n",
				timeout, len(waiting), len(sts))
			for _, s := range waiting {
				fmt.Fprintf(e.Stderr, "  %s\n", s.line())
			}
			for _, s := range failed {
				fmt.Fprintf(e.Stderr, "  %s\n", s.line())
			}
			if n := noResult(waiting); n > 0 {
				fmt.Fprintf(e.Stderr, "swctl wait: %d entries have no result at all: are the daemons running? "+
					"(systemctl start switchyard.target, or docker compose up -d)\n", n)
			}
			return quietError{fmt.Errorf("timed out")}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// noResult counts the entries no daemon has answered at all.
func noResult(sts []keyStatus) int {
	n := 0
	for _, s := range sts {
		if s.State == "" && !s.Stale {
			n++
		}
	}
	return n
}
