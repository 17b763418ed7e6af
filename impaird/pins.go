package impaird

import (
	"path/filepath"
	"strings"

	"github.com/switchyard-net/switchyard/schema"
)

// Pin directory names. Each port's link and maps are pinned under
// <bpffs>/<pin name>/. bpffs refuses a name with a dot (EPERM: dots are
// reserved for the kernel's own files), and VLAN subinterfaces are named
// eth1.100, so each '.' of a port name is written as pinDot (":2e", its
// hex code after a ':'). ':' never occurs in a netdev name (the kernel
// and the schema refuse it), so the encoding is injective and names
// without a dot are used as they are: pins of earlier releases are
// adopted unchanged.
const pinDot = ":2e"

// pinName is the name of port's pin directory; false when port cannot
// name one (not a valid netdev name: empty, ".", "..", too long, or with
// '/', ':' or NUL): such a key is never applied.
func pinName(port string) (string, bool) {
	if !safeDirName(port) {
		return "", false
	}
	return strings.ReplaceAll(port, ".", pinDot), true
}

// portOfPin inverts pinName; false for a name pinName never gives (not a
// directory of impaird's).
func portOfPin(name string) (string, bool) {
	port := strings.ReplaceAll(name, pinDot, ".")
	if n, ok := pinName(port); !ok || n != name {
		return "", false
	}
	return port, true
}

// safeDirName reports whether port can be a netdev name and so name a pin
// directory under --bpffs (see pinName) without escaping it.
func safeDirName(port string) bool {
	return port != "" && port != "." && port != ".." && len(port) <= schema.MaxIfnameLen &&
		!strings.ContainsAny(port, "/:\x00")
}

// dir is the pin directory of port ("" when port cannot have one).
func (d *daemon) dir(port string) string {
	name, ok := pinName(port)
	if !ok {
		return ""
	}
	return filepath.Join(d.cfg.BPFFS, name)
}
