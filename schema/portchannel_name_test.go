package schema

import "testing"

// IsPortChannelName (built without a message) agrees with
// portChannelProblem on every name.
func FuzzIsPortChannelName(f *testing.F) {
	for _, s := range []string{"PortChannel1", "PortChannel0001", "PortChannel12345", "PortChannel", "PortChannel-1", "Ethernet0", "", "PortChannel+1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := IsPortChannelName(name), portChannelProblem(name) == ""; got != want {
			t.Fatalf("IsPortChannelName(%q) = %v, portChannelProblem says %v", name, got, want)
		}
	})
}
