// Package fifo holds a first-in, first-out queue on one slice, for the
// bounded caches that drop what entered them first. It is not safe for
// concurrent use: its owner locks around it.
package fifo

// Queue is a first-in, first-out queue. Its zero value is empty and ready
// to use.
type Queue[T any] struct {
	items []T // items[head:] are queued
	head  int
}

// Push queues v last.
func (q *Queue[T]) Push(v T) { q.items = append(q.items, v) }

// Len is how many values are queued.
func (q *Queue[T]) Len() int { return len(q.items) - q.head }

// Peek returns the value queued first, leaving it queued; false when none
// is.
func (q *Queue[T]) Peek() (T, bool) {
	if q.head == len(q.items) {
		var zero T
		return zero, false
	}
	return q.items[q.head], true
}

// Pop takes the value queued first; false when none is.
func (q *Queue[T]) Pop() (T, bool) {
	var zero T
	if q.head == len(q.items) {
		return zero, false
	}
	v := q.items[q.head]
	q.items[q.head] = zero // no longer kept alive by the array
	q.head++
	if q.head > len(q.items)/2 {
		// Move what is left to the front, so that the array does not grow
		// with every value ever pushed.
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return v, true
}
