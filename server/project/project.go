// Package project carries the project a call belongs to through the call's
// context. The RPC layer resolves the project once, from the x-api-key
// header, and every layer below reads it from here instead of receiving it
// in each signature it passes through.
package project

import (
	"context"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

type contextKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *database.ProjectInfo) context.Context {
	return context.WithValue(ctx, contextKey{}, p)
}

// FromContext returns the project of the call, or nil when the call was
// made without the RPC layer resolving one (internal calls and tests): such
// a call belongs to the default project.
func FromContext(ctx context.Context) *database.ProjectInfo {
	p, _ := ctx.Value(contextKey{}).(*database.ProjectInfo)
	return p
}

// ID returns the ID of the call's project, database.DefaultProjectID when
// none was resolved.
func ID(ctx context.Context) string {
	if p := FromContext(ctx); p != nil {
		return p.ID
	}
	return database.DefaultProjectID
}
