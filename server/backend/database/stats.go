package database

import (
	"context"
	"time"
)

// MaxActivityRecords bounds the clients and attachments one
// ProjectActivity call reads: the admin API's stats are a view, not an
// export.
const MaxActivityRecords = 10000

// Activity is one record's last recorded activity in a range: a client's
// (Key is the client's key) or a document's (Key is its ID).
type Activity struct {
	Key string
	At  time.Time
}

// ProjectActivity is what the database knows of a project's use.
type ProjectActivity struct {
	// Documents counts the live documents, Clients the activated clients.
	Documents int64
	Clients   int64
	// Clients and documents whose last recorded activity lies in the
	// range, up to MaxActivityRecords each. A document is active when a
	// client's attachment to it was updated then.
	ActiveClients   []Activity
	ActiveDocuments []Activity
}

// Stats reads what GetProjectStats reports.
type Stats interface {
	// ProjectActivity reports the project's counts and its activity with
	// from <= time < to.
	ProjectActivity(ctx context.Context, projectID string, from, to time.Time) (*ProjectActivity, error)
}
