package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/internal/workqueue"
	"github.com/switchyard-net/switchyard/schema"
)

// Controller is what a daemon supplies: its tables and how to make the
// kernel match them. Everything else is the engine's.
type Controller interface {
	// Tables are the CONFIG_DB tables the controller reconciles.
	Tables() []string
	// Item maps a key of one of the tables to the work item that
	// reconciles it (orchagent: "TABLE|key"; impaird: the port). Items
	// are the unit of queueing, backoff and result cleanup.
	Item(table, key string) string
	// Reconcile makes the kernel match the Cache for item and reports
	// each key's result (Handle.SetResult). It returns an error only for
	// transient failures, which are retried with backoff; invalid input
	// is a result, not an error. Requeue asks to look again later.
	Reconcile(ctx context.Context, item string) error
	// Sweep removes kernel objects the controller owns that no
	// configured key names. It runs only once CONFIG_DB_INITIALIZED is
	// "1" and the first scan is reconciled.
	Sweep(ctx context.Context) error
}

// BatchController reconciles several ready items at once (orchagent sends
// a burst's route writes to the kernel together). errs[i] is items[i]'s.
type BatchController interface {
	Controller
	ReconcileBatch(ctx context.Context, items []string) (errs []error)
}

// RefBatchController is a BatchController (and a KeyItems one) that is
// handed each item's Ref with it: refs[i] names items[i]'s key in the
// Cache as it was when the item was queued, and Cache.GetIntoRef finds
// the entry without a look-up by name (100k routes: 100k look-ups in a
// 100k-key map the worker no longer makes). A ref may be zero (the item
// came another way: Handle.Enqueue, a retry) or stale (the key was
// deleted meanwhile): GetIntoRef then looks the key up.
type RefBatchController interface {
	BatchController
	ReconcileBatchRefs(ctx context.Context, items []string, refs []Ref) (errs []error)
}

// Trimmer is a controller that keeps arrays from one pass to the next
// (a burst grows them to a pass's worth). Trim lets them go; the engine
// calls it on the worker's goroutine once the queue has been empty for
// a second.
type Trimmer interface {
	Trim()
}

// ResultOwner is a controller that shares a result table with another
// writer (orchagent's INTERFACE_TABLE holds syncd's VlanN address mirror,
// as SONiC's intfmgrd does): results it does not own are never removed as
// stale.
type ResultOwner interface {
	OwnsResult(table, key string) bool
}

// KeyItems is a controller whose work item of every key is the key
// itself, "TABLE|key" (schema.ConfigKey; orchagent's): it may report a
// result with Handle.SetResultOf, naming it by that string, and the
// engine builds no item string per result.
type KeyItems interface {
	ItemsAreKeys()
}

// Starter is a controller with work of its own (kernel event watches,
// counters): Start runs once before the first scan; goroutines it starts
// through Handle.Go end with ctx.
type Starter interface {
	Start(ctx context.Context) error
}

// Factory builds the controller once Redis answers; h stays valid for the
// daemon's life. A controller that is an io.Closer is closed at the end.
type Factory func(h *Handle) (Controller, error)

// Config configures Run.
type Config struct {
	Name     string // daemon name: logs, the STATE_DB sentinel key
	RedisURL string
	Log      *logrus.Entry
	// Registry receives the engine's metrics; nil = none.
	Registry prometheus.Registerer
	// ResultFields are STATE_DB result fields the controller owns beside
	// schema.ResultFieldNames (impaird's xdp_mode, prog_id).
	ResultFields []string
	// Warn names the fields of a hash its table does not define; the
	// text becomes every result's warning (nil: no warnings).
	Warn func(table string, f schema.Fields) string
	// Queue tunes the per-item backoff (defaults: 10ms doubling to 5s).
	Queue workqueue.Options
	// MaxBatch bounds the items a BatchController gets at once (256).
	MaxBatch int
	// Ready, when set, is called once: after the first scan's items were
	// all reconciled once (systemd readiness).
	Ready func()
	// LostInterval is how often STATE_DB is checked for having been
	// emptied (default 500ms).
	LostInterval time.Duration
}

// sweepItem is the queue item of the sweep; no Item() can produce it.
const sweepItem = "\x00sweep"

// Limits on what the engine accepts as config; larger keys get a
// `state error` without their content reaching the cache or controller.
const (
	MaxKeyLen    = 512
	MaxFieldLen  = 256
	MaxValueLen  = 64 << 10
	MaxFieldsNum = 1024
)

// Handle is the controller's view of the engine.
type Handle struct {
	// Cache is the desired state: every key of the controller's tables.
	Cache *Cache
	// Log is the daemon's logger.
	Log *logrus.Entry
	// Redis is the daemon's Redis (for controller-owned hashes, e.g.
	// impaird's counters in COUNTERS_DB).
	Redis *redisx.Conn
	// Registry is where the controller registers its own metrics (nil =
	// none).
	Registry prometheus.Registerer

	e *engine
}

// Enqueue queues item for Reconcile (deduplicated).
func (h *Handle) Enqueue(item string) {
	if h.e.started.Load() {
		h.e.q.Add(item)
	}
}

// EnqueueAfter queues item after d.
func (h *Handle) EnqueueAfter(item string, d time.Duration) {
	if h.e.started.Load() {
		h.e.q.AddAfter(item, d)
	}
}

// RequestSweep queues a sweep (it runs only when the gate is open).
func (h *Handle) RequestSweep() { h.e.requestSweep() }

// SetResult records the outcome of table|key (stamp it with the entry's
// Stamp first) and extra controller-owned fields; only changes are
// written. Results of keys not in the Cache are ignored.
func (h *Handle) SetResult(table, key string, r schema.Result, extra schema.Fields) {
	h.e.res.set(table, key, r, extra)
}

// SetResultOf is SetResult of the key of e (as Cache.Get or GetInto
// returned it; stamp r with e.Stamp) with ck, the key's "TABLE|key" (a
// KeyItems controller's item of it, e.g. the string it reconciled): the
// result is kept under that string instead of a new one built per result,
// and while no key was deleted since e was read, the key is known to be
// cached without a look-up.
func (h *Handle) SetResultOf(ck string, e Entry, r schema.Result, extra schema.Fields) {
	h.e.res.setOf(ck, &e, e.Table, e.Key, r, extra)
}

// DeleteResult removes the result of table|key.
func (h *Handle) DeleteResult(table, key string) { h.e.res.remove(table, key) }

// Configured reports whether table|key is configured: in the Cache, or —
// so a sweep never races an event not read yet — in CONFIG_DB itself.
// In doubt (Redis error) it says yes.
func (h *Handle) Configured(ctx context.Context, table, key string) bool {
	if h.Cache.Has(table, key) {
		return true
	}
	n, err := h.e.cfgDB.Exists(ctx, schema.ConfigKey(table, key)).Result()
	return err != nil || n > 0
}

// Go runs f in a goroutine the engine waits for before Run returns.
func (h *Handle) Go(f func(ctx context.Context)) {
	h.e.wg.Add(1)
	go func() {
		defer h.e.wg.Done()
		f(h.e.ctx)
	}()
}

// Initialized reports whether CONFIG_DB_INITIALIZED is "1" now.
func (h *Handle) Initialized() bool { return h.e.gate.initialized.Load() }

// requeueError asks the engine to reconcile an item again after a delay.
type requeueError struct{ after time.Duration }

func (e *requeueError) Error() string { return fmt.Sprintf("requeue after %v", e.after) }

// Requeue is the error a Reconcile returns to be called again after d
// without counting as a failure (e.g. a netdev that no event announces).
func Requeue(d time.Duration) error { return &requeueError{after: d} }

type engine struct {
	cfg       Config
	log       *logrus.Entry
	ctx       context.Context
	ctrl      Controller
	tables    map[string]bool // the controller's tables (metric labels)
	cache     *Cache
	q         *workqueue.Queue
	res       *results
	gate      gate
	m         *metrics
	cfgDB     *redis.Client
	cancel    context.CancelFunc
	readyOnce sync.Once
	// summaryPending: a burst summary is scheduled (summarize).
	summaryPending atomic.Bool
	// fatalError, set once by fatal, is what Run returns.
	fatalOnce  sync.Once
	fatalError error
	wg         sync.WaitGroup
	started    atomic.Bool // workers run: Enqueue goes to the queue
	adds       []string    // items of consume's current events, for flushAdds
	addTags    []int32     // adds[i]'s Ref (its id field: the queue's tag)
	// scratch holds a new packed hash's fields while the cache works out
	// its generation and warning (consume's goroutine; Cache.setPacked)
	scratch schema.Fields
	// setRun's arrays, reused (a read batch's worth)
	runSets    []packedSet
	runHeld    []bool
	runChanged []bool
	runIDs     []int32
}
