package backend

import "time"

// Observer takes observations, as a Prometheus histogram does.
type Observer interface{ Observe(float64) }

// Gauge goes up and down, as a Prometheus gauge does.
type Gauge interface {
	Inc()
	Dec()
}

// observeSince records the seconds since start on o, if set.
func observeSince(o Observer, start time.Time) {
	if o != nil {
		o.Observe(time.Since(start).Seconds())
	}
}
