package edt

import "math"

// Distribution tables as netem uses them: DistSize samples of the
// distribution's inverse CDF at evenly spaced probabilities, in units of
// sigma/DistScale, clamped to int16. A jitter sample is
// table[random % DistSize] * jitter / DistScale. The tables are generated
// here with iproute2's own recipes (netem/normal.c, pareto.c,
// paretonormal.c), so the shapes match `tc qdisc add ... netem delay D J
// distribution X` value for value.
const (
	DistSize  = 4096
	DistScale = 8192 // NETEM_DIST_SCALE
)

// Distribution numbers as edt.c's enum dist.
const (
	DistUniform      = 0 // no table: uniform in [-jitter, +jitter)
	DistNormal       = 1
	DistPareto       = 2
	DistParetoNormal = 3
	numDists         = 4
)

// tableSize is maketable's resolution (4 entries per kept sample).
const tableSize = 16384

func clamp16(v float64) int16 {
	switch {
	case v < math.MinInt16:
		return math.MinInt16
	case v > math.MaxInt16:
		return math.MaxInt16
	}
	return int16(v)
}

// normalQuantiles is normal.c's table: x such that Phi(x) ≈ i/16384.
func normalQuantiles() []float64 {
	t := make([]float64, tableSize+1)
	for x := -10.0; x < 10.05; x += .00005 {
		i := int(math.RoundToEven(tableSize * (.5 + .5*math.Erf(x/math.Sqrt2))))
		t[i] = x
	}
	return t
}

// paretoValue is pareto.c's value for table index i (a = 3, shifted by
// the mean 1.5 and scaled by 4/3).
func paretoValue(i int) float64 {
	d := float64(i) / 65536
	d = 1.0 / math.Pow(d, 1.0/3.0)
	d -= 1.5
	d *= (4.0 / 3.0) * DistScale
	if d > 32767 {
		d = 32767
	}
	return math.RoundToEven(d)
}

// DistTable returns the table of a distribution (nil for uniform).
func DistTable(dist int) []int16 {
	out := make([]int16, 0, DistSize)
	switch dist {
	case DistNormal:
		q := normalQuantiles()
		for i := 0; i < tableSize; i += 4 {
			out = append(out, clamp16(math.RoundToEven(q[i]*DistScale)))
		}
	case DistPareto:
		for i := 65536; i > 0; i -= 16 {
			out = append(out, int16(paretoValue(i)))
		}
	case DistParetoNormal:
		q := normalQuantiles()
		for i := 0; i < tableSize; i += 4 {
			n := int(math.RoundToEven(q[i] * DistScale))
			p := int(paretoValue(65536 - 4*i))
			out = append(out, clamp16(float64((n+3*p)/4)))
		}
	default:
		return nil
	}
	return out
}

// DistMoments returns the mean and standard deviation of a sample
// (delay offset / jitter) drawn from the distribution as edt.c draws it:
// uniform on [-1, 1) or table/DistScale.
func DistMoments(dist int) (mean, stddev float64) {
	t := DistTable(dist)
	if t == nil {
		return 0, 1 / math.Sqrt(3)
	}
	var s, s2 float64
	for _, v := range t {
		x := float64(v) / DistScale
		s += x
		s2 += x * x
	}
	n := float64(len(t))
	mean = s / n
	return mean, math.Sqrt(s2/n - mean*mean)
}
