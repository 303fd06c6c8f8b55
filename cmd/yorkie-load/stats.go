package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// summary condenses a set of latency samples; durations are in milliseconds
// so the JSON output reads without conversion.
type summary struct {
	Count  int     `json:"count"`
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms"`
	P90MS  float64 `json:"p90_ms"`
	P99MS  float64 `json:"p99_ms"`
	MaxMS  float64 `json:"max_ms"`
}

// summarize sorts samples in place and returns their summary.
func summarize(samples []time.Duration) summary {
	if len(samples) == 0 {
		return summary{}
	}
	slices.Sort(samples)
	var total time.Duration
	for _, d := range samples {
		total += d
	}
	return summary{
		Count:  len(samples),
		MeanMS: ms(total / time.Duration(len(samples))),
		P50MS:  ms(quantile(samples, 0.50)),
		P90MS:  ms(quantile(samples, 0.90)),
		P99MS:  ms(quantile(samples, 0.99)),
		MaxMS:  ms(samples[len(samples)-1]),
	}
}

// quantile returns the nearest-rank q-quantile of sorted samples.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// String renders the summary on one table row.
func (s summary) String() string {
	return fmt.Sprintf("n=%d p50=%.2fms p90=%.2fms p99=%.2fms max=%.2fms mean=%.2fms",
		s.Count, s.P50MS, s.P90MS, s.P99MS, s.MaxMS, s.MeanMS)
}

// mib formats a byte count in MiB.
func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// kib formats a byte count in KiB.
func kib(b float64) string { return fmt.Sprintf("%.1f KiB", b/(1<<10)) }

// printTable writes name/value rows in two aligned columns.
func printTable(w io.Writer, rows [][2]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	_ = tw.Flush()
}
