package impaird

import (
	"strings"

	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/schema"
)

// setConfig records one CONFIG_DB change straight into the per-port view
// (what refresh copies from the engine's cache in the daemon), for tests
// that call reconcileLocked directly.
func (d *daemon) setConfig(ev redisx.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch ev.Table {
	case schema.TableImpairment:
		if ev.Deleted {
			delete(d.imp, ev.Key)
		} else {
			d.imp[ev.Key] = ev.Fields
		}
	case schema.TableImpairmentFlow:
		port, _, _ := strings.Cut(ev.Key, schema.ConfigSep)
		if ev.Deleted {
			delete(d.flows[port], ev.Key)
			if len(d.flows[port]) == 0 {
				delete(d.flows, port)
			}
			return
		}
		if d.flows[port] == nil {
			d.flows[port] = map[string]schema.Fields{}
		}
		d.flows[port][ev.Key] = ev.Fields
	}
}
