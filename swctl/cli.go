package swctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// Exit codes of swctl.
const (
	ExitOK      = 0 // success
	ExitRuntime = 1 // the command ran and failed: Redis, validation, wait errors
	ExitUsage   = 2 // the command line is wrong: unknown verb or flag, missing argument
)

// EnvRedis names the environment variable that sets the default --redis.
const EnvRedis = "SWITCHYARD_REDIS"

// DefaultRedisURL is used when neither --redis nor $SWITCHYARD_REDIS is set;
// it is the daemons' default too.
const DefaultRedisURL = "redis://127.0.0.1:6379"

// Env is what a command runs with: where to print and how to reach Redis.
type Env struct {
	Stdout, Stderr io.Writer
	RedisURL       string

	db *DB
}

// DB connects on first use, so --help and usage errors never need Redis.
func (e *Env) DB() (*DB, error) {
	if e.db == nil {
		db, err := Dial(e.RedisURL)
		if err != nil {
			return nil, err
		}
		e.db = db
	}
	return e.db, nil
}

// Close releases the Redis connections, if any.
func (e *Env) Close() {
	if e.db != nil {
		e.db.Close()
	}
}

// Runner runs a command with its positional arguments (flags are already
// parsed into the variables its Setup registered).
type Runner func(ctx context.Context, e *Env, args []string) error

// Command is one node of the verb tree. A node with Sub descends into the
// sub-command named by its first argument; a node with Setup runs itself.
// A node may have both ("config port Ethernet0 …" and "config port del …").
type Command struct {
	Name     string
	Args     string // positional arguments, for the usage line: "VID PORT"
	Summary  string // one line, shown in the parent's list
	Long     string // paragraph(s) shown by --help
	Examples []string
	Sub      []*Command
	// Setup registers the command's flags on fs and returns its runner.
	Setup func(fs *flag.FlagSet) Runner

	parent *Command
}

// UsageError is a wrong command line; swctl exits 2 for it.
type UsageError struct {
	Cmd *Command
	Msg string
}

func (e *UsageError) Error() string { return e.Msg }

func usagef(c *Command, format string, a ...any) error {
	return &UsageError{Cmd: c, Msg: fmt.Sprintf(format, a...)}
}

// Path is the command's full name: "swctl config vlan add".
func (c *Command) Path() string {
	if c.parent == nil {
		return c.Name
	}
	return c.parent.Path() + " " + c.Name
}

func (c *Command) find(name string) *Command {
	for _, s := range c.Sub {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (c *Command) link() {
	for _, s := range c.Sub {
		s.parent = c
		s.link()
	}
}

// Main runs swctl with os.Args and returns the exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// Run runs swctl with args (without the program name) and returns the exit
// code; tests call it directly.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := Root()
	env := &Env{Stdout: stdout, Stderr: stderr, RedisURL: os.Getenv(EnvRedis)}
	if env.RedisURL == "" {
		env.RedisURL = DefaultRedisURL
	}
	defer env.Close()
	if len(args) > 0 && args[0] == completeVerb {
		for _, c := range complete(ctx, env, args[1:]) {
			fmt.Fprintln(stdout, c)
		}
		return ExitOK
	}
	err := dispatch(ctx, root, env, args)
	var ue *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", ue.Cmd.Path(), ue.Msg, ue.Cmd.Path())
		return ExitUsage
	default:
		var q quietError
		if !errors.As(err, &q) {
			fmt.Fprintf(stderr, "swctl: %v\n", err)
		}
		return ExitRuntime
	}
}

// quietError is a runtime failure whose details were already printed.
type quietError struct{ error }

func dispatch(ctx context.Context, c *Command, env *Env, args []string) error {
	// Flags given before a verb ("swctl --redis URL show vlan") belong to
	// the nearest node; only --redis and --help are allowed there.
	if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && c.Setup == nil {
		fs := newFlagSet(c, env)
		if err := fs.Parse(args); err != nil {
			return flagErr(c, env, fs, err)
		}
		args = fs.Args()
	}
	if len(args) > 0 && len(c.Sub) > 0 {
		if s := c.find(args[0]); s != nil {
			return dispatch(ctx, s, env, args[1:])
		}
		if args[0] == "help" && c.parent == nil {
			return dispatch(ctx, c, env, append(args[1:], "--help"))
		}
	}
	if c.Setup == nil {
		if len(args) == 0 {
			printHelp(env.Stderr, c, nil)
			return &UsageError{Cmd: c, Msg: "missing command"}
		}
		var names []string
		for _, s := range c.Sub {
			names = append(names, s.Name)
		}
		return usagef(c, "unknown command %q%s", args[0], suggest(args[0], names))
	}
	fs := newFlagSet(c, env)
	run := c.Setup(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagErr(c, env, fs, err)
	}
	return run(ctx, env, pos)
}

func newFlagSet(c *Command, env *Env) *flag.FlagSet {
	fs := flag.NewFlagSet(c.Path(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&env.RedisURL, "redis", env.RedisURL,
		"Redis `URL`: redis://[user:pass@]host:port or unix:///path/redis.sock (default $"+EnvRedis+" or "+DefaultRedisURL+")")
	return fs
}

func flagErr(c *Command, env *Env, fs *flag.FlagSet, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		printHelp(env.Stdout, c, fs)
		return err
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
		msg = name + suggest("--"+strings.TrimLeft(name, "-"), names)
	}
	return &UsageError{Cmd: c, Msg: msg}
}

// parseInterspersed parses flags that may come after positional arguments
// ("vlan member add 100 Ethernet0 --untagged"); everything after "--" is
// positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return append(pos, tail...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// wantArgs checks the number of positional arguments.
func wantArgs(c *Command, args []string, min, max int) error {
	switch {
	case len(args) < min:
		return usagef(c, "missing argument: want %s", c.Args)
	case max >= 0 && len(args) > max:
		return usagef(c, "unexpected argument %q", args[max])
	}
	return nil
}

func printHelp(w io.Writer, c *Command, fs *flag.FlagSet) {
	usage := c.Path()
	if len(c.Sub) > 0 && c.Setup == nil {
		usage += " COMMAND"
	}
	if c.Args != "" {
		usage += " " + c.Args
	}
	fmt.Fprintf(w, "Usage: %s [flags]\n", usage)
	if c.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.Long))
	} else if c.Summary != "" {
		fmt.Fprintf(w, "\n%s%s.\n", strings.ToUpper(c.Summary[:1]), c.Summary[1:])
	}
	if len(c.Sub) > 0 {
		fmt.Fprintf(w, "\nCommands:\n")
		tw := newTabWriter(w)
		for _, s := range c.Sub {
			name := s.Name
			if s.Args != "" {
				name += " " + s.Args
			}
			fmt.Fprintf(tw, "  %s\t%s\n", name, s.Summary)
		}
		tw.Flush()
	}
	if fs == nil {
		fs = flag.NewFlagSet(c.Path(), flag.ContinueOnError)
		fs.String("redis", "", "Redis `URL`: redis://[user:pass@]host:port or unix:///path/redis.sock (default $"+EnvRedis+" or "+DefaultRedisURL+")")
	}
	fmt.Fprintf(w, "\nFlags:\n")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	tw := newTabWriter(w)
	for _, n := range names {
		f := fs.Lookup(n)
		arg, usage := flag.UnquoteUsage(f)
		switch arg {
		case "":
		case "string":
			arg = " VALUE"
		default:
			arg = " " + strings.ToUpper(arg)
		}
		if d := f.DefValue; d != "" && d != "false" && d != "[]" && f.Name != "redis" {
			usage += " (default " + d + ")"
		}
		fmt.Fprintf(tw, "  --%s%s\t%s\n", f.Name, arg, usage)
	}
	tw.Flush()
	if len(c.Examples) > 0 {
		fmt.Fprintf(w, "\nExamples:\n")
		for _, ex := range c.Examples {
			fmt.Fprintf(w, "  %s\n", ex)
		}
	}
	if len(c.Sub) > 0 {
		fmt.Fprintf(w, "\nRun '%s COMMAND --help' for a command's flags and examples.\n", c.Path())
	}
}
