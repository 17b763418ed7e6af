package redisx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		url                         string
		network, addr, user, passwd string
		tls                         bool
	}{
		{"", "tcp", "127.0.0.1:6379", "", "", false},
		{"redis://10.0.0.1:6380", "tcp", "10.0.0.1:6380", "", "", false},
		{"redis://localhost", "tcp", "localhost:6379", "", "", false},
		{"redis://10.0.0.1:6380/", "tcp", "10.0.0.1:6380", "", "", false},
		{"redis://:s3cret@h:1", "tcp", "h:1", "", "s3cret", false},
		{"redis://alice:p%40ss@h:1", "tcp", "h:1", "alice", "p@ss", false},
		{"redis://[::1]:7000", "tcp", "[::1]:7000", "", "", false},
		{"rediss://h:6380", "tcp", "h:6380", "", "", true},
		{"unix:///run/redis/redis.sock", "unix", "/run/redis/redis.sock", "", "", false},
		{"unix:///run/redis.sock?password=pw", "unix", "/run/redis.sock", "", "pw", false},
		{"unix:///run/redis.sock?user=bob&password=pw", "unix", "/run/redis.sock", "bob", "pw", false},
		{"unix://bob:pw@/run/redis.sock", "unix", "/run/redis.sock", "bob", "pw", false},
	}
	for _, tt := range tests {
		c, err := Connect(tt.url)
		if err != nil {
			t.Errorf("Connect(%q): %v", tt.url, err)
			continue
		}
		o := c.base
		if o.Network != tt.network || o.Addr != tt.addr || o.Username != tt.user || o.Password != tt.passwd || (o.TLSConfig != nil) != tt.tls {
			t.Errorf("Connect(%q) = %s %s user=%q pass=%q tls=%v", tt.url, o.Network, o.Addr, o.Username, o.Password, o.TLSConfig != nil)
		}
		if tt.passwd != "" && strings.Contains(c.String(), tt.passwd) {
			t.Errorf("String() of %q shows the password: %s", tt.url, c.String())
		}
		c.Close()
	}
}

func TestParseURLErrors(t *testing.T) {
	tests := []struct{ url, want string }{
		{"redis://h:6379/4", "DB number"},
		{"redis://h:6379/0", "DB number"},
		{"redis://h:notaport", "port"},
		{"redis://h:70000", "port"},
		{"redis://h:", "port"},
		{"http://h:6379", `unsupported scheme "http"`},
		{"h:6379", "scheme"},
		{"127.0.0.1:6379", "redis url"},
		{"unix://redis.sock", "absolute"},
		{"unix:relative.sock", "absolute"},
		{"unix:///r.sock?db=3", "DB number"},
		{"unix:///r.sock?foo=1", `unknown query parameter "foo"`},
		{"redis://h?password=x", "query parameters"},
		{"redis://secretonly@h", "ambiguous"},
		{"redis://u:sec%zzret@h", "redis url"},
	}
	for _, tt := range tests {
		_, err := Connect(tt.url)
		if err == nil {
			t.Errorf("Connect(%q): no error, want one containing %q", tt.url, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Connect(%q) = %v, want it to mention %q", tt.url, err, tt.want)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Connect(%q) error shows the password: %v", tt.url, err)
		}
	}
}

func TestConnectServer(t *testing.T) {
	srv, c := startRedis(t)
	ctx := context.Background()
	if c.DB(4) != c.DB(4) || c.DB(4) == c.DB(6) {
		t.Fatal("DB(n) must be cached per n")
	}
	if err := c.DB(4).Set(ctx, "k", "v4", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v := srv.Client(4).Get(ctx, "k").Val(); v != "v4" {
		t.Fatalf("DB(4) wrote to the wrong DB: %q", v)
	}
	if srv.Client(6).Exists(ctx, "k").Val() != 0 {
		t.Fatal("key visible in DB 6")
	}
	tcp, err := Connect(srv.TCPURL())
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	if err := tcp.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	bad, _ := Connect("unix://" + srv.Dir + "/nonexistent.sock")
	defer bad.Close()
	if err := bad.Ping(ctx); err == nil || !strings.Contains(err.Error(), "nonexistent.sock") {
		t.Fatalf("Ping of a missing socket = %v, want an error naming it", err)
	}
}

func TestConnectAuth(t *testing.T) {
	srv, _ := startRedis(t)
	ctx := context.Background()
	admin := srv.Client(0)
	if err := admin.Do(ctx, "ACL", "SETUSER", "alice", "on", ">a1ice", "~*", "&*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	alice, err := Connect(fmt.Sprintf("redis://alice:a1ice@127.0.0.1:%d", srv.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	if err := alice.Ping(ctx); err != nil {
		t.Fatalf("ACL user: %v", err)
	}
	wrong, _ := Connect(fmt.Sprintf("redis://alice:nope@127.0.0.1:%d", srv.Port))
	defer wrong.Close()
	if err := wrong.Ping(ctx); err == nil {
		t.Fatal("wrong password accepted")
	}

	// An ACL user without +config gets the redis.conf advice when
	// notifications are off, and no error when they are on (probed).
	if err := admin.ConfigSet(ctx, "notify-keyspace-events", "").Err(); err != nil {
		t.Fatal(err)
	}
	err = EnsureKeyspaceEvents(ctx, alice.DB(0), WatchClasses)
	var nce *NotifyConfigError
	if !errors.As(err, &nce) {
		t.Fatalf("EnsureKeyspaceEvents as alice = %v, want *NotifyConfigError", err)
	}
	// The message says what the probe missed (every event here: all off).
	if nce.Probe == nil || !strings.Contains(err.Error(), "probed without CONFIG: no del, expired, hset,") {
		t.Errorf("EnsureKeyspaceEvents as alice = %v, want the events the probe missed", err)
	}
	if err := admin.ConfigSet(ctx, "notify-keyspace-events", "AKE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := EnsureKeyspaceEvents(ctx, alice.DB(4), WatchClasses); err != nil {
		t.Fatalf("EnsureKeyspaceEvents as alice, notifications on: %v", err)
	}

	// Password only (the default user).
	if err := admin.ConfigSet(ctx, "requirepass", "pw0").Err(); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{
		fmt.Sprintf("redis://:pw0@127.0.0.1:%d", srv.Port),
		"unix://" + srv.Socket + "?password=pw0",
	} {
		c, err := Connect(u)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Ping(ctx); err != nil {
			t.Errorf("%s: %v", u, err)
		}
		if err := c.DB(6).Set(ctx, "x", "1", 0).Err(); err != nil {
			t.Errorf("%s: DB 6: %v", u, err)
		}
		c.Close()
	}
}

// TestURLPasswordNeverShown: no error or String() of any --redis URL,
// well-formed or not, contains its password.
func TestURLPasswordNeverShown(t *testing.T) {
	tests := []struct{ url, secret string }{
		{"redis://u:SECRET@127.0.0.1:6379/4", "SECRET"},
		{"redis://u:SECRET@127.0.0.1:6379?db=4", "SECRET"},
		{"redis://u:SECRET@127.0.0.1:99999", "SECRET"},
		{"redis://u:SECRET@127.0.0.1:", "SECRET"},
		{"redis://u:SECRET@127.0.0.1:port", "SECRET"},
		{"redis://u:SECRET@[::1", "SECRET"},
		{"redis://u:SECRET@[::1]:x", "SECRET"},
		{"redis://:SECRET@h:6379/0", "SECRET"},
		{"redis://SECRET@h", "SECRET"},
		{"redis://u:SECRET%zz@h", "SECRET"},
		{"redis://u%zz:SECRET@h", "SECRET"},
		{"redis://u:SE/CRET@h:bad", "SE/CRET"},
		{"redis://u:SE/CRET@h/4", "CRET"},
		{"redis://u:S%2FECRET@h/4", "S/ECRET"},
		{"redis://u:SE?CRET@h/4", "CRET"},
		{"redis://u:SE#CRET@h/4", "CRET"},
		{"redis://u:SE@CRET@h/4", "CRET"},
		{"redis://u:SECRET@h:6379?password=SECRET", "SECRET"},
		{"redis:u:SECRET@h:6379", "SECRET"},
		{"rediss://u:SECRET@h:0", "SECRET"},
		{"http://u:SECRET@h", "SECRET"},
		{"h:SECRET@x", "SECRET"},
		{"redis://u:SECRET@h\x7f", "SECRET"},
		{"unix://u:SECRET@/run/r.sock?db=4", "SECRET"},
		{"unix://u:SECRET@relative.sock", "SECRET"},
		{"unix:///run/r.sock?password=SECRET&db=4", "SECRET"},
		{"unix:///run/r.sock?password=SECRET&foo=1", "SECRET"},
		{"unix:///run/r.sock?pass=SECRET", "SECRET"},
		{"unix://host/r.sock?password=SECRET", "SECRET"},
		{"unix:r.sock?password=SECRET", "SECRET"},
		{"unix:///run/r.sock?password=SE%zzCRET", "CRET"},
		// Well-formed: String() and a failed Ping hide it too.
		{"redis://u:SECRET@127.0.0.1:1", "SECRET"},
		{"redis://:SECRET@127.0.0.1:1", "SECRET"},
		{"unix:///nonexistent/r.sock?password=SECRET", "SECRET"},
		{"unix://u:SECRET@/nonexistent/r.sock", "SECRET"},
	}
	for _, tt := range tests {
		c, err := Connect(tt.url)
		if err != nil {
			if strings.Contains(err.Error(), tt.secret) {
				t.Errorf("Connect(%q) error shows the password: %v", tt.url, err)
			}
			continue
		}
		if s := c.String(); strings.Contains(s, tt.secret) {
			t.Errorf("Connect(%q).String() shows the password: %s", tt.url, s)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := c.Ping(ctx); err == nil || strings.Contains(err.Error(), tt.secret) {
			t.Errorf("Ping of %q = %v, want an error without the password", tt.url, err)
		}
		cancel()
		c.Close()
	}
}
