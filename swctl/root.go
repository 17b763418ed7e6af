package swctl

// Root returns the whole verb tree of swctl.
func Root() *Command {
	root := &Command{
		Name:    "swctl",
		Summary: "configure and inspect a switchyard switch",
		Long: `swctl configures a switchyard switch through Redis, as SONiC's config/show do:
"config" verbs validate and write CONFIG_DB, "wait" waits for the daemons'
results in STATE_DB, "show" prints what the switch really holds.

Redis is found with --redis (any position) or $SWITCHYARD_REDIS, default
redis://127.0.0.1:6379. Errors go to stderr; exit status 0 = success,
1 = the command failed (Redis, invalid config, entries in error, timeout),
2 = wrong command line.`,
		Examples: []string{
			"swctl config load demo/routed.json && swctl wait",
			"swctl config vlan add 100 && swctl config vlan member add 100 Ethernet0 --untagged",
			"swctl config impairment set Ethernet1 --loss 20",
			"swctl show interfaces",
			"swctl --redis unix:///run/switchyard-demo/redis.sock show impairment --counters",
			"swctl config save backup.json",
		},
		Sub: []*Command{configCommand(), waitCommand(), showCommand(), completionCommand()},
	}
	root.link()
	return root
}
