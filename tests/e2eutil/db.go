package e2eutil

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
)

// HGetAll reads hash key of c (empty when it does not exist or Redis
// fails: the polls that call it try again).
func HGetAll(c *redis.Client, key string) map[string]string {
	h, _ := c.HGetAll(context.Background(), key).Result()
	return h
}

// Keys returns the keys of c matching pattern (SCAN), sorted, each once.
func Keys(c *redis.Client, pattern string) []string {
	var out []string
	var cursor uint64
	for {
		ks, next, err := c.Scan(context.Background(), cursor, pattern, 5000).Result()
		if err != nil {
			break
		}
		out = append(out, ks...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// WaitHash waits until hash key of c holds field=value for every pair of
// want ("" = the field is absent), and returns the hash.
func (s *Switch) WaitHash(c *redis.Client, key string, want map[string]string) map[string]string {
	s.T.Helper()
	var got map[string]string
	s.Eventually(fmt.Sprintf("%s %v", key, want), func() (bool, string) {
		got = HGetAll(c, key)
		for f, v := range want {
			if got[f] != v {
				return false, fmt.Sprintf("%s is %q in %v", f, got[f], got)
			}
		}
		return true, ""
	})
	return got
}

// WaitField waits until field of hash key of c is want ("" = absent).
func (s *Switch) WaitField(c *redis.Client, key, field, want string) {
	s.T.Helper()
	s.WaitHash(c, key, map[string]string{field: want})
}
