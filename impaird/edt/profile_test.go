package edt

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFieldsValid(t *testing.T) {
	for _, c := range []struct {
		in   map[string]string
		want Profile
	}{
		{map[string]string{"delay": "50ms"}, Profile{Delay: 50 * time.Millisecond}},
		{map[string]string{"delay": "200us"}, Profile{Delay: 200 * time.Microsecond}},
		{map[string]string{"delay": "1s"}, Profile{Delay: time.Second}},
		{map[string]string{"delay": "1.5ms"}, Profile{Delay: 1500 * time.Microsecond}},
		{map[string]string{"delay": "250ns"}, Profile{Delay: 250}},
		{map[string]string{"delay": "10msec"}, Profile{Delay: 10 * time.Millisecond}},
		{map[string]string{"delay": "3µs"}, Profile{Delay: 3 * time.Microsecond}},
		{map[string]string{"delay": "0ms"}, Profile{}},
		{map[string]string{"delay": "10s"}, Profile{Delay: 10 * time.Second}},
		{map[string]string{"delay": "10ms", "jitter": "2ms"}, Profile{Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond}},
		{map[string]string{"delay": "10ms", "jitter": "2ms", "jitter_distribution": "normal"}, Profile{Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, Distribution: Normal}},
		{map[string]string{"jitter": "1ms", "jitter_distribution": "Pareto"}, Profile{Jitter: time.Millisecond, Distribution: Pareto}},
		{map[string]string{"jitter": "1ms", "jitter_distribution": "paretonormal"}, Profile{Jitter: time.Millisecond, Distribution: ParetoNormal}},
		{map[string]string{"jitter": "1ms", "jitter_distribution": "uniform"}, Profile{Jitter: time.Millisecond}},
		{map[string]string{"shape": "100mbit"}, Profile{Shape: 100e6}},
		{map[string]string{"shape": "1gbit", "shape_limit": "64kb"}, Profile{Shape: 1e9, ShapeLimitBytes: 65536}},
		{map[string]string{"shape": "1000000", "shape_limit": "15000"}, Profile{Shape: 1e6, ShapeLimitBytes: 15000}},
		{map[string]string{"shape": "10mbps", "shape_limit": "100ms"}, Profile{Shape: 80e6, ShapeLimitTime: 100 * time.Millisecond}},
		{map[string]string{"shape": "800kbit", "shape_limit": "1mb"}, Profile{Shape: 800e3, ShapeLimitBytes: 1 << 20}},
		{map[string]string{"delay": "5ms", "reorder": "true"}, Profile{Delay: 5 * time.Millisecond, Reorder: true}},
		{map[string]string{"delay": "5ms", "reorder": "false"}, Profile{Delay: 5 * time.Millisecond}},
		{map[string]string{"delay": "5ms", "loss": "10", "rate": "bogus"}, Profile{Delay: 5 * time.Millisecond}},
	} {
		got, found, err := ParseFields(c.in)
		if err != nil || !found || got != c.want {
			t.Errorf("ParseFields(%v) = %+v, %v, %v; want %+v, true, nil", c.in, got, found, err, c.want)
			continue
		}
		// Format round-trips.
		again, _, err := ParseFields(got.Format())
		if err != nil || again != got {
			t.Errorf("ParseFields(%v.Format()=%v) = %+v, %v", got, got.Format(), again, err)
		}
	}
}

func TestParseFieldsAbsent(t *testing.T) {
	p, found, err := ParseFields(map[string]string{"loss": "10", "NULL": "NULL"})
	if err != nil || found || p != (Profile{}) {
		t.Fatalf("got %+v, %v, %v; want zero, false, nil", p, found, err)
	}
	if _, found, _ := ParseFields(nil); found {
		t.Fatal("nil map: found")
	}
}

func TestParseFieldsErrors(t *testing.T) {
	for _, c := range []struct {
		in          map[string]string
		field, want string
	}{
		{map[string]string{"delay": "50"}, "delay", "needs a unit: want a duration with a unit such as 50ms"},
		{map[string]string{"delay": "50xs"}, "delay", "want a duration with a unit"},
		{map[string]string{"delay": "-5ms"}, "delay", "want a duration"},
		{map[string]string{"delay": "1e3ms"}, "delay", "want a duration"},
		{map[string]string{"delay": ""}, "delay", "want a duration"},
		{map[string]string{"delay": "ms"}, "delay", "want a duration"},
		{map[string]string{"delay": "11s"}, "delay", "at most 10s"},
		{map[string]string{"delay": "0.1ns"}, "delay", "below the 1ns resolution"},
		{map[string]string{"jitter": "abc"}, "jitter", "want a duration"},
		{map[string]string{"delay": "1ms", "jitter_distribution": "normal"}, "jitter_distribution", "needs a non-zero jitter"},
		{map[string]string{"jitter": "0ms", "jitter_distribution": "normal"}, "jitter_distribution", "needs a non-zero jitter"},
		{map[string]string{"jitter": "1ms", "jitter_distribution": "gauss"}, "jitter_distribution", "want one of uniform, normal, pareto, paretonormal"},
		{map[string]string{"shape": "fast"}, "shape", "want a rate such as 100mbit"},
		{map[string]string{"shape": "0"}, "shape", "want a rate"},
		{map[string]string{"shape_limit": "1mb"}, "shape_limit", "needs shape"},
		{map[string]string{"shape": "1mbit", "shape_limit": "lots"}, "shape_limit", "want bytes (15000, 64kb, 1mb"},
		{map[string]string{"shape": "1mbit", "shape_limit": "0ms"}, "shape_limit", "must be more than 0"},
		{map[string]string{"shape": "1mbit", "shape_limit": "20s"}, "shape_limit", "at most 10s"},
		{map[string]string{"shape": "1mbit", "shape_limit": "0"}, "shape_limit", "want bytes"},
		{map[string]string{"delay": "1ms", "reorder": "yes"}, "reorder", "want true or false"},
	} {
		_, found, err := ParseFields(c.in)
		var fe *FieldError
		if !found || !errors.As(err, &fe) {
			t.Errorf("ParseFields(%v) = found %v, err %v; want a *FieldError", c.in, found, err)
			continue
		}
		if fe.Field != c.field || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "field "+c.field) {
			t.Errorf("ParseFields(%v) error %q (field %s); want field %s and %q", c.in, err, fe.Field, c.field, c.want)
		}
	}
}

func TestQueueLimit(t *testing.T) {
	for _, c := range []struct {
		p    Profile
		want time.Duration
	}{
		{Profile{}, 0},
		{Profile{Shape: 100e6}, DefaultShapeLimit},
		{Profile{Shape: 100e6, ShapeLimitTime: 5 * time.Millisecond}, 5 * time.Millisecond},
		{Profile{Shape: 8e6, ShapeLimitBytes: 1000}, time.Millisecond},
	} {
		if got := c.p.QueueLimit(); got != c.want {
			t.Errorf("%+v.QueueLimit() = %v; want %v", c.p, got, c.want)
		}
	}
}

func TestFieldsListed(t *testing.T) {
	want := []string{"delay", "jitter", "jitter_distribution", "shape", "shape_limit", "reorder", "slot", "slot_packets", "slot_bytes", "slot_distribution"}
	if !reflect.DeepEqual(Fields, want) {
		t.Fatalf("Fields = %v; want %v", Fields, want)
	}
}

// FuzzParseFields: never panics; an accepted profile round-trips through
// Format and stays within the documented limits; every error is a
// *FieldError naming a field that was given.
func FuzzParseFields(f *testing.F) {
	f.Add("50ms", "10ms", "normal", "100mbit", "64kb", "false")
	f.Add("1s", "", "", "1gbit", "100ms", "true")
	f.Add("200us", "1ms", "pareto", "", "", "")
	f.Add("50", "x", "gauss", "0", "0ms", "yes")
	f.Fuzz(func(t *testing.T, delay, jitter, dist, shape, limit, reorder string) {
		in := map[string]string{}
		for k, v := range map[string]string{"delay": delay, "jitter": jitter, "jitter_distribution": dist, "shape": shape, "shape_limit": limit, "reorder": reorder} {
			if v != "" {
				in[k] = v
			}
		}
		p, found, err := ParseFields(in)
		if found != (len(in) > 0) {
			t.Fatalf("found = %v for %v", found, in)
		}
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FieldError", err)
			}
			if _, given := in[fe.Field]; !given {
				t.Fatalf("error names field %s, not given in %v", fe.Field, in)
			}
			return
		}
		if p.Delay < 0 || p.Delay > MaxDelay || p.Jitter < 0 || p.Jitter > MaxDelay || p.ShapeLimitTime > MaxShapeLimitTime {
			t.Fatalf("out of limits: %+v from %v", p, in)
		}
		again, _, err := ParseFields(p.Format())
		if err != nil || again != p {
			t.Fatalf("round trip %v -> %+v -> %v -> %+v, %v", in, p, p.Format(), again, err)
		}
	})
}
