package swctl

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/schema"
)

// silentLogger drops go-redis's own log lines: swctl reports errors itself,
// once, on stderr.
type silentLogger struct{}

func (silentLogger) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(silentLogger{}) }

// DB hands out one Redis client per database number, all to the server
// named by the --redis URL. The URL grammar is the daemons' own
// (redisx.Connect): redis://, rediss://, unix://, with user and password.
type DB struct {
	conn *redisx.Conn
}

// Dial parses url and checks that the server answers.
func Dial(url string) (*DB, error) {
	if !strings.Contains(url, "://") {
		return nil, fmt.Errorf("--redis %q: want redis://[user:pass@]host:port or unix:///path/redis.sock", url)
	}
	conn, err := redisx.Connect(url)
	if err != nil {
		return nil, fmt.Errorf("--redis: %v", err)
	}
	d := &DB{conn: conn}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.Client(schema.ConfigDB).Ping(ctx).Err(); err != nil {
		d.Close()
		hint := fmt.Sprintf("is redis-server running? start it (systemctl start redis-server, or docker compose up -d) or point --redis or $%s at it", EnvRedis)
		if msg := err.Error(); strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "NOAUTH") {
			hint = "check the user and password in the URL"
		}
		return nil, fmt.Errorf("cannot reach Redis at %s: %v (%s)", conn, err, hint)
	}
	return d, nil
}

// Client returns the client of database n (cached).
func (d *DB) Client(n int) *redis.Client { return d.conn.DB(n) }

// Close closes every client.
func (d *DB) Close() { d.conn.Close() }

// Config, State and Counters are the clients of CONFIG_DB, STATE_DB and COUNTERS_DB.
func (d *DB) Config() *redis.Client   { return d.Client(schema.ConfigDB) }
func (d *DB) State() *redis.Client    { return d.Client(schema.StateDB) }
func (d *DB) Counters() *redis.Client { return d.Client(schema.CountersDB) }

// scanKeys returns every key matching pattern, sorted.
func scanKeys(ctx context.Context, c *redis.Client, pattern string) ([]string, error) {
	var keys []string
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("scan %s: %w", pattern, err)
	}
	sort.Strings(keys)
	// SCAN may return a key twice while the keyspace is rehashing.
	out := keys[:0]
	for i, k := range keys {
		if i == 0 || k != keys[i-1] {
			out = append(out, k)
		}
	}
	return out, nil
}

// globEscape quotes the glob metacharacters of a table name for SCAN MATCH.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(s)
}

// readTable returns every hash of a table, by the key after "TABLE"+sep,
// with the NULL placeholder removed. Keys that are not hashes are skipped.
func readTable(ctx context.Context, c *redis.Client, table, sep string) (map[string]map[string]string, error) {
	keys, err := scanKeys(ctx, c, globEscape(table+sep)+"*")
	if err != nil {
		return nil, err
	}
	return readHashes(ctx, c, keys, table+sep)
}

// readHashes reads keys in one pipeline; the result is indexed by key
// without prefix. Keys that vanished or are not hashes are left out.
func readHashes(ctx context.Context, c *redis.Client, keys []string, prefix string) (map[string]map[string]string, error) {
	out := make(map[string]map[string]string, len(keys))
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
	if err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("read %s*: %w", prefix, err)
	}
	for i, k := range keys {
		h, err := cmds[i].Result()
		if err != nil || len(h) == 0 {
			continue
		}
		delete(h, schema.NullField)
		out[strings.TrimPrefix(k, prefix)] = h
	}
	return out, nil
}

func isWrongType(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "WRONGTYPE")
}
