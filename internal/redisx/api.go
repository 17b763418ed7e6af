package redisx

// API contract (implemented in this package; signatures are fixed so the
// daemons can be written in parallel):
//
//	// Connect parses --redis ("redis://[user:pass@]host:port", "unix:///path/redis.sock";
//	// default "redis://127.0.0.1:6379") and returns a Conn that hands out one
//	// client per DB number.
//	func Connect(url string) (*Conn, error)
//	func (c *Conn) DB(n int) *redis.Client   // cached per n
//	func (c *Conn) Close() error
//
//	// EnsureKeyspaceEvents makes notify-keyspace-events contain classes
//	// (e.g. "Kgh" or "K$hgx"), keeping existing ones. If CONFIG is refused it
//	// returns a *NotifyConfigError whose message names the redis.conf line.
//	func EnsureKeyspaceEvents(ctx context.Context, c *redis.Client, classes string) error
//
//	// Change says a key of a watched table may have changed (level-triggered:
//	// the consumer re-reads the key). Key is the part after "TABLE|".
//	type Change struct{ Table, Key string }
//
//	// Watcher watches CONFIG_DB-style tables of one DB: PSUBSCRIBE
//	// __keyspace@N__:TABLE|* first, then SCAN TABLE|*, calling notify for
//	// every key seen; after a disconnect or a Redis restart (run_id change)
//	// it resubscribes and rescans, and also notifies keys it knew that are
//	// now gone. Also watches plain string keys named in Options.Keys (e.g.
//	// CONFIG_DB_INITIALIZED) with Table "".
//	type WatchOptions struct {
//		DB     int
//		Tables []string
//		Keys   []string              // plain keys, reported with Table ""
//		OnSync func(ctx context.Context) // called after each full (re)scan completes
//	}
//	func NewWatcher(c *redis.Client, opts WatchOptions) *Watcher
//	func (w *Watcher) Run(ctx context.Context, notify func(Change)) error // blocks until ctx done
//
//	// Events is the coalescing convenience on top of Watcher: it delivers
//	// each changed key's *current* hash (or Deleted) once per burst.
//	type Event struct {
//		Table, Key string
//		Fields     map[string]string // current hash; nil when Deleted
//		Deleted    bool
//	}
//	func (w *Watcher) Events(ctx context.Context) <-chan Event
//
//	// ReadHash returns a key's hash without the NULL placeholder; ok=false if absent.
//	func ReadHash(ctx context.Context, c *redis.Client, key string) (map[string]string, bool, error)
//
//	// StateWriter writes STATE_DB/COUNTERS_DB hashes whose named fields this
//	// daemon owns: writes only changed values, removes only its own fields
//	// (and the key when nothing else is left), pipelines bursts.
//	func NewStateWriter(c *redis.Client, owned []string) *StateWriter
//	func (w *StateWriter) Set(ctx context.Context, key string, fields map[string]string) error // owned fields absent from fields are removed
//	func (w *StateWriter) Delete(ctx context.Context, key string) error                      // remove owned fields of key
//	func (w *StateWriter) Batch() *Batch  // b.Set / b.Delete, then b.Flush(ctx) = one pipeline
//	func (w *StateWriter) Load(ctx context.Context, pattern string) error // adopt existing owned fields of keys matching pattern (after restarts)
//	func (w *StateWriter) Keys() []string                                  // keys currently holding owned fields
//	func (w *StateWriter) Forget()                                         // drop the cache (after a Redis restart) so the next Set rewrites
