package edt

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// TestApplyMissingFeature: on a kernel without fq or clsact (the CI host
// kernel) Apply fails with a *MissingFeatureError naming the feature and
// leaves the port as it was. The VM suite (tests/edte2e) covers the
// kernel that has both.
func TestApplyMissingFeature(t *testing.T) {
	testns.RequireRoot(t)
	hasFQ, _ := kernelcap.Has(kernelcap.FQ)
	hasClsact, _ := kernelcap.Has(kernelcap.Clsact)
	if hasFQ && hasClsact {
		t.Skip("this kernel has fq and clsact: nothing is missing (tests/edte2e covers Apply there)")
	}
	ns := testns.New(t)
	ns.IP("link", "add", "e0", "type", "veth", "peer", "name", "e1")
	before := ns.Run("tc", "-n", ns.Name, "-j", "qdisc", "show", "dev", "e0")

	in, err := New(Options{NetNS: ns.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	err = in.Apply("e0", Profile{Delay: 50 * time.Millisecond})
	var mf *MissingFeatureError
	if !errors.As(err, &mf) {
		t.Fatalf("Apply = %v; want a *MissingFeatureError", err)
	}
	want := "fq qdisc"
	if !hasClsact {
		want = "clsact qdisc"
	}
	if mf.Feature != want || mf.Port != "e0" || !strings.Contains(err.Error(), "kernel lacks the "+want) {
		t.Fatalf("Apply error %q (feature %q); want it to say the kernel lacks the %s on e0", err, mf.Feature, want)
	}
	t.Logf("Apply on this kernel: %v", err)
	if after := ns.Run("tc", "-n", ns.Name, "-j", "qdisc", "show", "dev", "e0"); after != before {
		t.Fatalf("qdiscs changed by a failed Apply:\nbefore %s\nafter  %s", before, after)
	}
	if err := in.Remove("e0"); err != nil {
		t.Fatalf("Remove after a failed Apply: %v", err)
	}
}

func TestFqSizing(t *testing.T) {
	fq := FqFor(3, Profile{Delay: 200 * time.Millisecond})
	// 200 ms at 1 Gbit/s of minimum-size frames (1.49 Mpps) is ~298,000
	// packets: all must fit, in one flow too.
	if fq.PacketLimit < 298000 || fq.FlowPacketLimit < 298000 {
		t.Fatalf("limit %d flow_limit %d; want >= 298000 for 200ms at 1Gbit/s", fq.PacketLimit, fq.FlowPacketLimit)
	}
	if fq.Horizon != 10e6 {
		t.Fatalf("horizon %dus; want fq's default 10s when the window is short", fq.Horizon)
	}
	fq = FqFor(3, Profile{Delay: 10 * time.Second, Jitter: time.Second, Distribution: Normal})
	if fq.Horizon != 15e6 {
		t.Fatalf("horizon %dus; want 15s (10s delay + 4x1s normal tail + 1s slack)", fq.Horizon)
	}
	if fq := FqFor(3, Profile{}); fq.PacketLimit != minFqLimit {
		t.Fatalf("limit %d; want fq's default %d for an empty profile", fq.PacketLimit, minFqLimit)
	}
}
