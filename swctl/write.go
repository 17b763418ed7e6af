package swctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-net/switchyard/schema"
)

// change is what one apply does: set whole hashes, delete keys, and
// optionally mark the configuration complete (CONFIG_DB_INITIALIZED "1").
type change struct {
	Set        []entry
	Delete     []string // full Redis keys, "TABLE|key"
	MarkInited bool
}

// applied says, per key, what apply did: "set", "unchanged" or "deleted".
type applied struct {
	Key    string
	Action string
}

// apply writes c to CONFIG_DB in one MULTI/EXEC. Each set replaces the
// whole hash (fields absent from the entry are removed) but leaves a hash
// that already equals the entry untouched, so the daemons see no event for
// it. The keys are WATCHed and the transaction retried when someone else
// writes them meanwhile.
func apply(ctx context.Context, c *redis.Client, ch change) ([]applied, error) {
	keys := make([]string, 0, len(ch.Set)+len(ch.Delete))
	for _, e := range ch.Set {
		keys = append(keys, e.RedisKey())
	}
	keys = append(keys, ch.Delete...)
	var report []applied
	txf := func(tx *redis.Tx) error {
		report = report[:0]
		existing, err := readHashesRaw(ctx, tx, keys[:len(ch.Set)])
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for i, e := range ch.Set {
				old := existing[i]
				if maps.Equal(old, e.Fields) {
					report = append(report, applied{e.RedisKey(), "unchanged"})
					continue
				}
				var stale []string
				for f := range old {
					if _, keep := e.Fields[f]; !keep {
						stale = append(stale, f)
					}
				}
				if len(stale) > 0 {
					sort.Strings(stale)
					p.HDel(ctx, e.RedisKey(), stale...)
				}
				p.HSet(ctx, e.RedisKey(), flatten(e.Fields)...)
				report = append(report, applied{e.RedisKey(), "set"})
			}
			for _, k := range ch.Delete {
				p.Del(ctx, k)
				report = append(report, applied{k, "deleted"})
			}
			if ch.MarkInited {
				p.Set(ctx, schema.KeyConfigDBInitialized, "1", 0)
			}
			return nil
		})
		return err
	}
	for attempt := 0; ; attempt++ {
		err := c.Watch(ctx, txf, keys...)
		if err == nil {
			return report, nil
		}
		if !errors.Is(err, redis.TxFailedErr) || attempt == 9 {
			return nil, fmt.Errorf("write CONFIG_DB: %w", err)
		}
	}
}

// readHashesRaw reads each key's hash as stored (NULL placeholder kept);
// a missing key reads as an empty map.
func readHashesRaw(ctx context.Context, c redis.Cmdable, keys []string) ([]map[string]string, error) {
	out := make([]map[string]string, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(keys))
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HGetAll(ctx, k)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read CONFIG_DB: %w", err)
	}
	for i := range keys {
		out[i] = cmds[i].Val()
	}
	return out, nil
}

func flatten(f map[string]string) []any {
	names := make([]string, 0, len(f))
	for k := range f {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]any, 0, 2*len(f))
	for _, k := range names {
		out = append(out, k, f[k])
	}
	return out
}

// readOne returns a CONFIG_DB hash without the NULL placeholder, and
// whether the key exists.
func readOne(ctx context.Context, db *DB, table, key string) (map[string]string, bool, error) {
	h, err := db.Config().HGetAll(ctx, schema.ConfigKey(table, key)).Result()
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", schema.ConfigKey(table, key), err)
	}
	if len(h) == 0 {
		return map[string]string{}, false, nil
	}
	delete(h, schema.NullField)
	return h, true, nil
}

// setEntry validates fields for table/key and writes them as the whole
// hash, printing what happened.
func setEntry(ctx context.Context, e *Env, table, key string, fields map[string]string) error {
	ent, _, err := canonical(table, key, fields)
	if err != nil {
		return &ValidationError{Lines: errorLines(table, key, err)}
	}
	if w := unknownFields(table, key, fields); w != "" {
		fmt.Fprintf(e.Stderr, "swctl: warning: %s\n", w)
	}
	db, err := e.DB()
	if err != nil {
		return err
	}
	rep, err := apply(ctx, db.Config(), change{Set: []entry{ent}})
	if err != nil {
		return err
	}
	printApplied(e, rep)
	return nil
}

// mergeEntry applies updates (and removes the fields in unset) on top of
// the existing hash of table/key, validates the result and writes it.
func mergeEntry(ctx context.Context, e *Env, table, key string, updates map[string]string, unset []string) error {
	db, err := e.DB()
	if err != nil {
		return err
	}
	cur, _, err := readOne(ctx, db, table, key)
	if err != nil {
		return err
	}
	for _, f := range unset {
		delete(cur, f)
	}
	maps.Copy(cur, updates)
	return setEntry(ctx, e, table, key, cur)
}

// deleteEntries removes keys (full "TABLE|key" names); it fails, writing
// nothing, when one of them is not configured.
func deleteEntries(ctx context.Context, e *Env, keys ...string) error {
	db, err := e.DB()
	if err != nil {
		return err
	}
	n, err := db.Config().Exists(ctx, keys...).Result()
	if err != nil {
		return fmt.Errorf("read CONFIG_DB: %w", err)
	}
	if int(n) != len(keys) {
		for _, k := range keys {
			if x, _ := db.Config().Exists(ctx, k).Result(); x == 0 {
				return fmt.Errorf("%s: not configured (nothing deleted)%s", k, keyHint(k))
			}
		}
	}
	rep, err := apply(ctx, db.Config(), change{Delete: keys})
	if err != nil {
		return err
	}
	printApplied(e, rep)
	return nil
}

// keyHint explains why a key the user named may not be found: the schema's
// complaint about its spelling ("use Vlan100|00:aa:…"), if it has one.
func keyHint(full string) string {
	table, key, _ := strings.Cut(full, schema.ConfigSep)
	_, err := schema.Parse(table, key, map[string]string{})
	var fe *schema.FieldError
	if errors.As(err, &fe) && fe.Field == "" {
		return "; " + fe.Error()
	}
	return ""
}

func printApplied(e *Env, rep []applied) {
	for _, a := range rep {
		fmt.Fprintf(e.Stdout, "%s %s\n", a.Action, a.Key)
	}
}

// fieldFlag maps a command-line flag to a CONFIG_DB field.
type fieldFlag struct {
	Flag, Field, Usage string
}

// fieldFlags registers string flags for fields, plus the generic
// --field k=v and --unset FIELD, and after parsing returns the fields
// given on the command line.
type fieldFlags struct {
	fs     *flag.FlagSet
	byFlag map[string]string // flag name → field
	vals   map[string]*string
	extra  kvList
	unset  strList
}

func newFieldFlags(fs *flag.FlagSet, defs []fieldFlag, withUnset bool) *fieldFlags {
	ff := &fieldFlags{fs: fs, byFlag: map[string]string{}, vals: map[string]*string{}}
	for _, d := range defs {
		ff.byFlag[d.Flag] = d.Field
		ff.vals[d.Flag] = fs.String(d.Flag, "", d.Usage+" (field "+d.Field+")")
	}
	fs.Var(&ff.extra, "field", "set any `field=value` (repeatable): passes fields through to the schema as they are")
	if withUnset {
		fs.Var(&ff.unset, "unset", "remove `field` from the entry (repeatable)")
	}
	return ff
}

// fields returns the fields set by flags (only those given).
func (ff *fieldFlags) fields() map[string]string {
	out := map[string]string{}
	ff.fs.Visit(func(f *flag.Flag) {
		if field, ok := ff.byFlag[f.Name]; ok {
			out[field] = *ff.vals[f.Name]
		}
	})
	for _, kv := range ff.extra {
		out[kv[0]] = kv[1]
	}
	return out
}

// kvList is a repeatable k=v flag.
type kvList [][2]string

func (l *kvList) String() string { return "" }
func (l *kvList) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want field=value, got %q", s)
	}
	*l = append(*l, [2]string{k, v})
	return nil
}

// strList is a repeatable string flag.
type strList []string

func (l *strList) String() string     { return strings.Join(*l, ",") }
func (l *strList) Set(s string) error { *l = append(*l, s); return nil }
