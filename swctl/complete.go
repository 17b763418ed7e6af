package swctl

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/switchyard-net/switchyard/schema"
)

// completeVerb is the hidden verb the completion scripts call:
// `swctl __complete WORD... CURRENT` prints the candidates for CURRENT (the
// word being typed, possibly empty), one a line. A first line "#files"
// asks the shell for file names instead.
const completeVerb = "__complete"

// filesDirective is the line that asks the shell to complete file names.
const filesDirective = "#files"

// complete returns the candidates for the last of words, the command line
// after "swctl". Verbs and flags come from the command tree; names (ports,
// VLANs, addresses, routes, MACs, flows) are read live from CONFIG_DB when
// Redis answers within a second, and silently left out when it does not.
func complete(ctx context.Context, env *Env, words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, prev := words[len(words)-1], words[:len(words)-1]
	c := Root()
	var pos []string
	var pending *flag.Flag // a flag whose value is being typed
	for i := 0; i < len(prev); i++ {
		w := prev[i]
		if len(w) > 1 && w[0] == '-' && w != "--" {
			name, val, hasVal := strings.Cut(strings.TrimLeft(w, "-"), "=")
			f := flagsOf(c, env).Lookup(name)
			if name == "redis" && hasVal {
				env.RedisURL = val
			}
			if f == nil || isBoolFlag(f) || hasVal {
				continue
			}
			if i+1 == len(prev) {
				pending = f
				break
			}
			if name == "redis" {
				env.RedisURL = prev[i+1]
			}
			i++
			continue
		}
		if len(pos) == 0 {
			if s := c.find(w); s != nil {
				c = s
				continue
			}
		}
		pos = append(pos, w)
	}

	var cands []string
	switch {
	case pending != nil:
		cands = flagValues(ctx, env, pending.Name)
	case strings.HasPrefix(cur, "-"):
		flagsOf(c, env).VisitAll(func(f *flag.Flag) { cands = append(cands, "--"+f.Name) })
		cands = append(cands, "--help")
	default:
		if len(pos) == 0 {
			for _, s := range c.Sub {
				cands = append(cands, s.Name)
			}
		}
		if c.Setup != nil {
			args := strings.Fields(strings.NewReplacer("[", "", "]", "").Replace(c.Args))
			if c.Name == "add" && c.parent != nil && c.parent.Name == "traffic" && len(pos) >= 2 {
				cands = append(cands, trafficAddValues(pos)...)
			} else if len(pos) < len(args) {
				kind := args[len(pos)]
				if kind == "FILE" {
					return []string{filesDirective}
				}
				cands = append(cands, argValues(ctx, env, c, kind, pos)...)
			}
		}
	}
	out := cands[:0]
	for _, s := range cands {
		if strings.HasPrefix(s, cur) {
			out = append(out, s)
		}
	}
	return out
}

// flagsOf returns the flags of command c (--redis for a node without its own).
func flagsOf(c *Command, env *Env) *flag.FlagSet {
	fs := newFlagSet(c, &Env{RedisURL: env.RedisURL})
	if c.Setup != nil {
		c.Setup(fs)
	}
	return fs
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagValues are the candidates for the value of flag name.
func flagValues(ctx context.Context, env *Env, name string) []string {
	switch name {
	case "admin":
		return []string{"up", "down"}
	case "ifname":
		return append(liveNames(ctx, env, schema.TablePort, 0), vlanNames(ctx, env)...)
	case "loss-model":
		return []string{"random", "gilbert", "periodic", "state"}
	case "direction":
		return []string{string(schema.DirIngress), string(schema.DirEgress), string(schema.DirBoth)}
	case "proto":
		return []string{"tcp", "udp", "icmp", "icmpv6"}
	case "type":
		return schema.KnownACLTypes()[:3]
	case "stage":
		return []string{"ingress", "egress"}
	case "action":
		return []string{"FORWARD", "DROP"}
	case "ip-protocol":
		return []string{"TCP", "UDP", "ICMP", "ICMPV6"}
	case "ports":
		return liveNames(ctx, env, schema.TablePort, 0)
	case "timeout":
		return []string{"10s", "30s", "1m", "5m"}
	case "schedule":
		return liveNames(ctx, env, schema.TableImpairmentSchedule, 0)
	}
	return nil
}

// argValues are the candidates for a positional argument of kind (a word of
// the command's Args: PORT, VID, VLAN, IFNAME, ADDR/LEN, PREFIX, MAC, NAME).
func argValues(ctx context.Context, env *Env, c *Command, kind string, pos []string) []string {
	switch kind {
	case "PORT":
		return liveNames(ctx, env, schema.TablePort, 0)
	case "VID":
		var out []string
		for _, v := range vlanNames(ctx, env) {
			out = append(out, strings.TrimPrefix(v, "Vlan"))
		}
		return out
	case "VLAN":
		return vlanNames(ctx, env)
	case "SCHEDULE":
		return liveNames(ctx, env, schema.TableImpairmentSchedule, 0)
	case "IFNAME":
		return append(liveNames(ctx, env, schema.TablePort, 0), vlanNames(ctx, env)...)
	case "ADDR/LEN":
		if c.Name != "del" || len(pos) == 0 {
			return nil
		}
		return append(liveKeys(ctx, env, schema.TableInterface, pos[0]),
			liveKeys(ctx, env, schema.TableVlanInterface, pos[0])...)
	case "PREFIX":
		return liveNames(ctx, env, schema.TableStaticRoute, -1) // VRF|PREFIX keys too
	case "MAC":
		if c.Name != "del" || len(pos) == 0 {
			return nil
		}
		name, err := vlanName(pos[0])
		if err != nil {
			return nil
		}
		return liveKeys(ctx, env, schema.TableFDB, name)
	case "STREAM":
		if c.Name != "del" || len(pos) == 0 {
			return nil
		}
		return trafficStreams(ctx, env, pos[0])
	case "TABLE":
		return liveNames(ctx, env, schema.TableACLTable, 0)
	case "RULE":
		if c.Name != "del" || len(pos) == 0 {
			return nil
		}
		return liveKeys(ctx, env, schema.TableACLRule, pos[0])
	case "NAME":
		if c.Name != "del" || len(pos) == 0 {
			return nil
		}
		return liveKeys(ctx, env, schema.TableImpairmentFlow, pos[0])
	}
	return nil
}

func vlanNames(ctx context.Context, env *Env) []string {
	return liveNames(ctx, env, schema.TableVlan, 0)
}

// liveNames returns part n (0 = first, -1 = last) of the keys of CONFIG_DB table,
// deduplicated and sorted; nil when Redis does not answer.
func liveNames(ctx context.Context, env *Env, table string, n int) []string {
	keys := configKeys(ctx, env, table, "")
	seen := map[string]bool{}
	var out []string
	for _, k := range keys {
		parts := strings.Split(k, schema.ConfigSep)
		i := n
		if i < 0 {
			i = len(parts) - 1
		}
		if i < len(parts) && !seen[parts[i]] {
			seen[parts[i]] = true
			out = append(out, parts[i])
		}
	}
	sortNatural(out)
	return out
}

// liveKeys returns the rest of the keys of table that start with first|.
func liveKeys(ctx context.Context, env *Env, table, first string) []string {
	var out []string
	for _, k := range configKeys(ctx, env, table, first+schema.ConfigSep) {
		out = append(out, strings.TrimPrefix(k, first+schema.ConfigSep))
	}
	sort.Strings(out)
	return out
}

// configKeys returns the keys (without "TABLE|") of CONFIG_DB table that
// start with prefix.
func configKeys(ctx context.Context, env *Env, table, prefix string) []string {
	if env.db == nil && !reachable(env.RedisURL) {
		return nil
	}
	db, err := env.DB()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	head := table + schema.ConfigSep
	keys, err := scanKeys(ctx, db.Config(), globEscape(head+prefix)+"*")
	if err != nil {
		return nil
	}
	for i := range keys {
		keys[i] = strings.TrimPrefix(keys[i], head)
	}
	return keys
}

// reachable is a quick look (no retries) at whether anything listens at a
// Redis URL, so a TAB without Redis does not wait for the client's retries.
func reachable(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	network, addr := "tcp", u.Host
	switch u.Scheme {
	case "unix":
		network, addr = "unix", u.Path
	case "redis", "rediss":
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), "6379")
		}
	default:
		return false
	}
	c, err := net.DialTimeout(network, addr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// suggest returns ` (did you mean "x"?)` for the candidate closest to word
// (edit distance at most 2, or a unique prefix), or "".
func suggest(word string, cands []string) string {
	best, bestD := "", 3
	var prefixed []string
	for _, c := range cands {
		if strings.HasPrefix(c, word) {
			prefixed = append(prefixed, c)
		}
		if d := editDistance(word, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" && len(prefixed) == 1 {
		best = prefixed[0]
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
