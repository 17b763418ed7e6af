package swctl

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/switchyard-net/switchyard/schema"
)

func configCommand() *Command {
	return &Command{
		Name:    "config",
		Summary: "change CONFIG_DB: ports, VLANs, addresses, routes, MACs, impairments, traffic; load and save",
		Long: `Change the switch's intent in CONFIG_DB. Every entry is validated with the
daemons' own schema before anything is written; an invalid entry writes
nothing and exits 1. The daemons apply what is written; 'swctl wait' waits for
their results and 'swctl show state' lists them.`,
		Examples: []string{
			"swctl config vlan add 100",
			"swctl config vlan member add 100 Ethernet0 --untagged",
			"swctl config load demo/routed.json --replace && swctl wait",
		},
		Sub: []*Command{
			portCommand(), vlanCommand(), interfaceCommand(), routeCommand(),
			macCommand(), impairmentCommand(), trafficCommand(), aclCommand(), loadCommand(), saveCommand(),
		},
	}
}

var portFields = []fieldFlag{
	{"admin", "admin_status", "administrative state: up or down"},
	{"mtu", "mtu", "MTU, 68-9216"},
	{"mac", "mac", "MAC address"},
	{"description", "description", "free text"},
}

func portCommand() *Command {
	c := &Command{
		Name:    "port",
		Args:    "PORT",
		Summary: "set fields of PORT|PORT (merged with what is there)",
		Long: `Set fields of a port (CONFIG_DB PORT|PORT). The given fields are merged into
the existing entry; fields not given are left as they are, and fields never
set are not managed (the kernel's value stays). PORT is an existing netdev.`,
		Examples: []string{
			"swctl config port Ethernet0 --mtu 9100 --admin up",
			"swctl config port Ethernet0 --description 'to h0' --unset mtu",
			"swctl config port del Ethernet0",
		},
	}
	c.Setup = func(fs *flag.FlagSet) Runner {
		ff := newFieldFlags(fs, portFields, true)
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(c, args, 1, 1); err != nil {
				return err
			}
			return mergeEntry(ctx, e, schema.TablePort, args[0], ff.fields(), ff.unset)
		}
	}
	c.Sub = []*Command{delCommand("del", "PORT", "remove PORT|PORT (the port is no longer managed)",
		[]string{"swctl config port del Ethernet3"},
		func(args []string) ([]string, error) {
			return []string{schema.ConfigKey(schema.TablePort, args[0])}, nil
		}), portTuningCommand()}
	return c
}

// delCommand builds a "del" verb: keysOf turns the positional arguments
// (as many as words in args) into the Redis keys to delete.
func delCommand(name, args, summary string, examples []string, keysOf func([]string) ([]string, error)) *Command {
	c := &Command{Name: name, Args: args, Summary: summary, Examples: examples}
	n := len(strings.Fields(args))
	c.Setup = func(fs *flag.FlagSet) Runner {
		return func(ctx context.Context, e *Env, pos []string) error {
			if err := wantArgs(c, pos, n, n); err != nil {
				return err
			}
			keys, err := keysOf(pos)
			if err != nil {
				return usagef(c, "%v", err)
			}
			return deleteEntries(ctx, e, keys...)
		}
	}
	return c
}

// vlanName accepts "100" or "Vlan100" and returns "Vlan100".
func vlanName(s string) (string, error) {
	n := strings.TrimPrefix(s, "Vlan")
	id, err := strconv.Atoi(n)
	if err != nil || id < 1 || id > 4094 || strconv.Itoa(id) != n {
		return "", fmt.Errorf("VLAN %q: want a VLAN id 1-4094 or VlanN", s)
	}
	return "Vlan" + n, nil
}

var vlanFields = []fieldFlag{
	{"admin", "admin_status", "administrative state of the VLAN interface: up or down"},
	{"mtu", "mtu", "MTU of the VLAN interface, 68-9216"},
	{"mac", "mac", "MAC of the VLAN interface"},
}

func vlanCommand() *Command {
	add := &Command{
		Name:    "add",
		Args:    "VID",
		Summary: "create VLAN|VlanVID (or update its fields)",
		Long: `Create VLAN VID (CONFIG_DB VLAN|VlanVID with vlanid VID). On an existing VLAN
the given fields are merged into it.`,
		Examples: []string{"swctl config vlan add 100", "swctl config vlan add Vlan200 --mtu 9000"},
	}
	add.Setup = func(fs *flag.FlagSet) Runner {
		ff := newFieldFlags(fs, vlanFields, true)
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(add, args, 1, 1); err != nil {
				return err
			}
			name, err := vlanName(args[0])
			if err != nil {
				return usagef(add, "%v", err)
			}
			f := ff.fields()
			f["vlanid"] = strings.TrimPrefix(name, "Vlan")
			return mergeEntry(ctx, e, schema.TableVlan, name, f, ff.unset)
		}
	}
	del := &Command{
		Name:     "del",
		Args:     "VID",
		Summary:  "remove VLAN|VlanVID (refused while it has members, addresses or MACs)",
		Examples: []string{"swctl config vlan del 100"},
	}
	del.Setup = func(fs *flag.FlagSet) Runner {
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(del, args, 1, 1); err != nil {
				return err
			}
			name, err := vlanName(args[0])
			if err != nil {
				return usagef(del, "%v", err)
			}
			db, err := e.DB()
			if err != nil {
				return err
			}
			var users []string
			for _, t := range []string{schema.TableVlanMember, schema.TableVlanInterface, schema.TableFDB} {
				keys, err := scanKeys(ctx, db.Config(), globEscape(schema.ConfigKey(t, name+"|"))+"*")
				if err != nil {
					return err
				}
				users = append(users, keys...)
			}
			if len(users) > 0 {
				return fmt.Errorf("%s is in use, remove these first (nothing deleted): %s", name, strings.Join(users, ", "))
			}
			return deleteEntries(ctx, e, schema.ConfigKey(schema.TableVlan, name))
		}
	}
	return &Command{
		Name:    "vlan",
		Summary: "add or remove VLANs and their members",
		Examples: []string{
			"swctl config vlan add 100",
			"swctl config vlan member add 100 Ethernet0 --untagged",
			"swctl config vlan member del 100 Ethernet0",
			"swctl config vlan del 100",
		},
		Sub: []*Command{add, del, vlanMemberCommand()},
	}
}

func vlanMemberCommand() *Command {
	add := &Command{
		Name:    "add",
		Args:    "VID PORT",
		Summary: "add PORT to the VLAN: VLAN_MEMBER|VlanVID|PORT (tagged unless --untagged)",
		Long: `Make PORT a member of VLAN VID (CONFIG_DB VLAN_MEMBER|VlanVID|PORT). As in
SONiC the member is tagged unless --untagged (or --priority-tagged) is given.`,
		Examples: []string{
			"swctl config vlan member add 100 Ethernet0 --untagged",
			"swctl config vlan member add 100 Ethernet3",
		},
	}
	add.Setup = func(fs *flag.FlagSet) Runner {
		untagged := fs.Bool("untagged", false, "untagged member: its PVID is the VLAN")
		prio := fs.Bool("priority-tagged", false, "priority-tagged member (sent with VLAN id 0)")
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(add, args, 2, 2); err != nil {
				return err
			}
			name, err := vlanName(args[0])
			if err != nil {
				return usagef(add, "%v", err)
			}
			mode := string(schema.Tagged)
			switch {
			case *untagged && *prio:
				return usagef(add, "--untagged and --priority-tagged exclude each other")
			case *untagged:
				mode = string(schema.Untagged)
			case *prio:
				mode = string(schema.PriorityTagged)
			}
			return setEntry(ctx, e, schema.TableVlanMember, name+"|"+args[1],
				map[string]string{"tagging_mode": mode})
		}
	}
	del := delCommand("del", "VID PORT", "remove PORT from the VLAN",
		[]string{"swctl config vlan member del 100 Ethernet0"},
		func(a []string) ([]string, error) {
			name, err := vlanName(a[0])
			return []string{schema.ConfigKey(schema.TableVlanMember, name+"|"+a[1])}, err
		})
	return &Command{Name: "member", Summary: "add or remove VLAN members", Sub: []*Command{add, del},
		Examples: add.Examples}
}

// interfaceTable is VLAN_INTERFACE for VlanN, INTERFACE for anything else.
func interfaceTable(ifname string) string {
	if strings.HasPrefix(ifname, "Vlan") {
		return schema.TableVlanInterface
	}
	return schema.TableInterface
}

func interfaceCommand() *Command {
	add := &Command{
		Name:    "add",
		Args:    "IFNAME ADDR/LEN",
		Summary: "add an IP address: INTERFACE|IFNAME|ADDR/LEN (VLAN_INTERFACE for VlanN)",
		Examples: []string{
			"swctl config interface ip add Ethernet0 10.0.0.1/24",
			"swctl config interface ip add Vlan100 10.1.0.1/24",
		},
	}
	add.Setup = func(fs *flag.FlagSet) Runner {
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(add, args, 2, 2); err != nil {
				return err
			}
			return setEntry(ctx, e, interfaceTable(args[0]), args[0]+"|"+args[1], nil)
		}
	}
	del := delCommand("del", "IFNAME ADDR/LEN", "remove an IP address",
		[]string{"swctl config interface ip del Ethernet0 10.0.0.1/24"},
		func(a []string) ([]string, error) {
			return []string{schema.ConfigKey(interfaceTable(a[0]), a[0]+"|"+a[1])}, nil
		})
	ip := &Command{Name: "ip", Summary: "add or remove IP addresses", Sub: []*Command{add, del},
		Examples: append(add.Examples, del.Examples...)}
	return &Command{Name: "interface", Summary: "IP addresses of ports and VLAN interfaces", Sub: []*Command{ip},
		Examples: ip.Examples}
}

var routeFields = []fieldFlag{
	{"nexthop", "nexthop", "gateway address(es), comma-separated for ECMP"},
	{"ifname", "ifname", "outgoing interface(s), comma-separated, parallel to --nexthop"},
	{"distance", "distance", "administrative distance / metric, 0-255"},
}

func routeCommand() *Command {
	add := &Command{
		Name:    "add",
		Args:    "PREFIX",
		Summary: "add or replace a static route: STATIC_ROUTE|PREFIX",
		Long: `Add a static route (CONFIG_DB STATIC_ROUTE|PREFIX, or VRF|PREFIX with --vrf).
An existing route with that prefix is replaced. PREFIX must have its host bits
clear (10.2.0.0/16, not 10.2.0.1/16).`,
		Examples: []string{
			"swctl config route add 10.2.0.0/16 --nexthop 10.0.0.2",
			"swctl config route add 10.3.0.0/16 --nexthop 10.0.0.2,10.0.1.2 --ifname Ethernet0,Ethernet1",
			"swctl config route add 192.0.2.0/24 --blackhole",
		},
	}
	add.Setup = func(fs *flag.FlagSet) Runner {
		ff := newFieldFlags(fs, routeFields, false)
		blackhole := fs.Bool("blackhole", false, "drop traffic to PREFIX (field blackhole)")
		vrf := fs.String("vrf", "", "VRF name; the key becomes VRF|PREFIX")
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(add, args, 1, 1); err != nil {
				return err
			}
			f := ff.fields()
			if *blackhole {
				f["blackhole"] = "true"
			}
			key := args[0]
			if *vrf != "" {
				key = *vrf + "|" + key
			}
			return setEntry(ctx, e, schema.TableStaticRoute, key, f)
		}
	}
	del := &Command{Name: "del", Args: "PREFIX", Summary: "remove a static route",
		Examples: []string{"swctl config route del 10.2.0.0/16"}}
	del.Setup = func(fs *flag.FlagSet) Runner {
		vrf := fs.String("vrf", "", "VRF name of the route")
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(del, args, 1, 1); err != nil {
				return err
			}
			key, err := routeKey(ctx, e, *vrf, args[0])
			if err != nil {
				return err
			}
			return deleteEntries(ctx, e, key)
		}
	}
	return &Command{Name: "route", Summary: "add or remove static routes", Sub: []*Command{add, del},
		Examples: append(add.Examples, del.Examples...)}
}

// routeKey finds the stored key of a route: "PREFIX" or "VRF|PREFIX"
// ("default|PREFIX" and bare "PREFIX" are the same route).
func routeKey(ctx context.Context, e *Env, vrf, prefix string) (string, error) {
	if p, err := netip.ParsePrefix(prefix); err == nil {
		prefix = p.Masked().String()
	}
	cands := []string{vrf + "|" + prefix}
	if vrf == "" || vrf == "default" {
		cands = []string{prefix, "default|" + prefix}
	}
	db, err := e.DB()
	if err != nil {
		return "", err
	}
	for _, k := range cands {
		full := schema.ConfigKey(schema.TableStaticRoute, k)
		if n, err := db.Config().Exists(ctx, full).Result(); err == nil && n == 1 {
			return full, nil
		}
	}
	return schema.ConfigKey(schema.TableStaticRoute, cands[0]), nil
}

func macCommand() *Command {
	add := &Command{
		Name:     "add",
		Args:     "VLAN MAC PORT",
		Summary:  "add a static FDB entry: FDB|VlanN|MAC with port PORT",
		Examples: []string{"swctl config mac add Vlan100 00:11:22:33:44:55 Ethernet0", "swctl config mac add 100 02:00:00:00:00:01 Ethernet1"},
	}
	add.Setup = func(fs *flag.FlagSet) Runner {
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(add, args, 3, 3); err != nil {
				return err
			}
			name, err := vlanName(args[0])
			if err != nil {
				return usagef(add, "%v", err)
			}
			mac := args[1]
			if hw, err := net.ParseMAC(mac); err == nil && len(hw) == 6 {
				mac = hw.String() // accept 00:AA:… and 00-aa-…; the schema wants lowercase colons
			}
			return setEntry(ctx, e, schema.TableFDB, name+"|"+mac, map[string]string{"port": args[2]})
		}
	}
	del := delCommand("del", "VLAN MAC", "remove a static FDB entry",
		[]string{"swctl config mac del Vlan100 00:11:22:33:44:55"},
		func(a []string) ([]string, error) {
			name, err := vlanName(a[0])
			if err != nil {
				return nil, err
			}
			mac := a[1]
			if hw, err := net.ParseMAC(mac); err == nil {
				mac = hw.String()
			}
			return []string{schema.ConfigKey(schema.TableFDB, name+"|"+mac)}, nil
		})
	return &Command{Name: "mac", Summary: "add or remove static MAC (FDB) entries", Sub: []*Command{add, del},
		Examples: append(add.Examples, del.Examples...)}
}
