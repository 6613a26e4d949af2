package main

import (
	"math"
	"slices"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest value such that at least p percent of the
// samples are less than or equal to it. It returns 0 for no samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	if rank < 1 {
		rank = 1
	}
	if rank > n {
		rank = n
	}
	return sorted[rank-1]
}

// latencySummary is the distribution of one set of latency samples.
type latencySummary struct {
	N             int
	P50, P90, P99 time.Duration
	Max           time.Duration
}

// summarize sorts samples in place and returns their distribution.
func summarize(samples []time.Duration) latencySummary {
	slices.Sort(samples)
	s := latencySummary{N: len(samples)}
	if len(samples) == 0 {
		return s
	}
	s.P50 = percentile(samples, 50)
	s.P90 = percentile(samples, 90)
	s.P99 = percentile(samples, 99)
	s.Max = samples[len(samples)-1]
	return s
}

// spread is the min, median and max of one metric over several runs.
type spread struct {
	Min, Median, Max float64
}

// spreadOf returns the spread of values; the median of an even count is the
// mean of the two middle values. It does not modify values.
func spreadOf(values []float64) spread {
	if len(values) == 0 {
		return spread{math.NaN(), math.NaN(), math.NaN()}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	n := len(v)
	med := v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return spread{Min: v[0], Median: med, Max: v[n-1]}
}

// ms converts a duration to float milliseconds, the unit every latency is
// reported in.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
