package loops

import (
	"math"
	"slices"
)

// moments are the running count, mean and sum of squared deviations of a
// sample (Welford), mergeable exactly (Chan et al.).
type moments struct {
	n    uint64
	mean float64
	m2   float64
}

func (m *moments) add(x float64) {
	m.n++
	d := x - m.mean
	m.mean += d / float64(m.n)
	m.m2 += d * (x - m.mean)
}

func (m *moments) merge(o *moments) {
	if o.n == 0 {
		return
	}
	if m.n == 0 {
		*m = *o
		return
	}
	n := m.n + o.n
	d := o.mean - m.mean
	m.mean += d * float64(o.n) / float64(n)
	m.m2 += o.m2 + d*d*float64(m.n)*float64(o.n)/float64(n)
	m.n = n
}

// variance is the sample variance (n-1 in the denominator), 0 for n < 2.
func (m *moments) variance() float64 {
	if m.n < 2 {
		return 0
	}
	return max(m.m2/float64(m.n-1), 0)
}

// Quantiles of iteration times come from the samples themselves while they
// are few (exactLimit), and from a log-bucketed histogram beyond: bucket i
// holds the values in (gamma^(i-1), gamma^i], and a quantile is reported as
// the bucket's midpoint in relative terms, within sketchError of a value of
// the sample. Memory is bounded by the number of buckets a 64-bit value can
// fall in (about 4,400), whatever the number of samples, and the result does
// not depend on the order in which samples arrive or sketches merge.
const (
	exactLimit  = 4096
	sketchGamma = 1.01
	// sketchError bounds the relative error of a quantile from buckets.
	sketchError = (sketchGamma - 1) / (sketchGamma + 1)
)

var logGamma = math.Log(sketchGamma)

type sketch struct {
	exact   []int64          // the samples, while not bucketed
	buckets map[int32]uint64 // non-nil once bucketed; values <= 0 in zeros
	zeros   uint64
	n       uint64
}

func (s *sketch) add(x int64) {
	s.n++
	if s.buckets == nil {
		s.exact = append(s.exact, x)
		if len(s.exact) > exactLimit {
			s.bucketize()
		}
		return
	}
	s.addBucket(x, 1)
}

func bucketOf(x int64) int32 { return int32(math.Ceil(math.Log(float64(x)) / logGamma)) }

func (s *sketch) addBucket(x int64, c uint64) {
	if x <= 0 {
		s.zeros += c
		return
	}
	s.buckets[bucketOf(x)] += c
}

func (s *sketch) bucketize() {
	s.buckets = make(map[int32]uint64)
	for _, x := range s.exact {
		s.addBucket(x, 1)
	}
	s.exact = nil
}

func (s *sketch) merge(o *sketch) {
	if o.n == 0 {
		return
	}
	s.n += o.n
	if s.buckets == nil && o.buckets == nil && len(s.exact)+len(o.exact) <= exactLimit {
		s.exact = append(s.exact, o.exact...)
		return
	}
	if s.buckets == nil {
		s.bucketize()
	}
	for _, x := range o.exact {
		s.addBucket(x, 1)
	}
	for b, c := range o.buckets {
		s.buckets[b] += c
	}
	s.zeros += o.zeros
}

// Exact reports whether quantiles are computed from every sample.
func (s *sketch) Exact() bool { return s.buckets == nil }

// quantile is the nearest-rank q-quantile (the smallest sample with at
// least q of the samples at or below it); 0 without samples.
func (s *sketch) quantile(q float64) float64 {
	if s.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(s.n)))
	rank = min(max(rank, 1), s.n)
	if s.buckets == nil {
		v := slices.Clone(s.exact)
		slices.Sort(v)
		return float64(v[rank-1])
	}
	if rank <= s.zeros {
		return 0
	}
	keys := make([]int32, 0, len(s.buckets))
	for b := range s.buckets {
		keys = append(keys, b)
	}
	slices.Sort(keys)
	seen := s.zeros
	for _, b := range keys {
		seen += s.buckets[b]
		if seen >= rank {
			return 2 * math.Pow(sketchGamma, float64(b)) / (sketchGamma + 1)
		}
	}
	return 2 * math.Pow(sketchGamma, float64(keys[len(keys)-1])) / (sketchGamma + 1)
}

// t975 is the 0.975 quantile of Student's t distribution with df degrees
// of freedom (the half-width factor of a 95% confidence interval).
func t975(df uint64) float64 {
	table := [...]float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	switch {
	case df == 0:
		return math.Inf(1)
	case df < uint64(len(table)):
		return table[df]
	case df < 60:
		return 2.042 - (2.042-2.000)*float64(df-30)/30
	case df < 120:
		return 2.000 - (2.000-1.980)*float64(df-60)/60
	}
	return 1.960
}
