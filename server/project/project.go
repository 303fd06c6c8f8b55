// Package project carries the project a call belongs to through the call's
// context within the RPC layer: its interceptor resolves the project once,
// from the x-api-key header, and the handlers read it there to name it to
// routing and the backend, which take it as an argument.
package project

import (
	"context"
	"errors"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

type contextKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *database.ProjectInfo) context.Context {
	return context.WithValue(ctx, contextKey{}, p)
}

// ErrMissing: a call names no project. Every call below the RPC layer acts
// in the project it is given (the one the RPC layer resolved, or the one an
// admin call or housekeeping names); none falls back to the default
// project.
var ErrMissing = errors.New("the call names no project")

// FromContext returns the project of the call, or nil when none was put in
// its context.
func FromContext(ctx context.Context) *database.ProjectInfo {
	p, _ := ctx.Value(contextKey{}).(*database.ProjectInfo)
	return p
}
