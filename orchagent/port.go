package orchagent

import (
	"fmt"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// applyPort sets the managed fields of an existing netdev. A port that
// does not exist (yet) is pending; its appearance (a link event) brings the
// key back.
func (o *Orch) applyPort(key string, f schema.Fields) outcome {
	refs := []string{resLink(key)}
	p, err := schema.ParsePort(key, f)
	if err != nil {
		return errorOut(err, refs)
	}
	if isOurDevName(p.Name) {
		return errorOut(fmt.Errorf("PORT|%s: %s is a device orchagent creates, not a port", key, p.Name), refs)
	}
	cur, ok, err := o.getLink(p.Name)
	if err != nil {
		return kernelOut(err, refs)
	}
	if !ok {
		return pendingOut(waitingForLink(p.Name), refs)
	}
	want, changes := linkDiff(cur, p.AdminUp, p.MTU, p.MAC, p.Description)
	if len(changes) == 0 {
		return okOut(refs)
	}
	if err := o.act(schema.TablePort, key, "set "+strings.Join(changes, " "),
		func() error { return o.k.Links().Set(want) }); err != nil {
		return kernelOut(err, refs)
	}
	return okOut(refs)
}

// removePort stops managing the port; ports are never deleted and their
// settings stay as they are.
func (o *Orch) removePort(string) outcome { return okOut(nil) }

// linkDiff returns a LinkInfo setting only the fields that differ from
// cur, and a description of each change for the log.
func linkDiff(cur netlinkmgr.LinkInfo, admin *bool, mtu *int, mac []byte, alias *string) (netlinkmgr.LinkInfo, []string) {
	want := netlinkmgr.LinkInfo{Name: cur.Name}
	var changes []string
	if mtu != nil && (cur.MTU == nil || *cur.MTU != *mtu) {
		v := *mtu
		want.MTU = &v
		changes = append(changes, fmt.Sprintf("mtu %d", v))
	}
	if len(mac) > 0 && !macEqual(cur.MAC, mac) {
		want.MAC = append([]byte(nil), mac...)
		changes = append(changes, "address "+want.MAC.String())
	}
	if alias != nil && (cur.Alias == nil || *cur.Alias != *alias) {
		v := *alias
		want.Alias = &v
		changes = append(changes, fmt.Sprintf("alias %q", v))
	}
	if admin != nil && (cur.AdminUp == nil || *cur.AdminUp != *admin) {
		v := *admin
		want.AdminUp = &v
		if v {
			changes = append(changes, "up")
		} else {
			changes = append(changes, "down")
		}
	}
	return want, changes
}
