// Package project carries the project a call belongs to through the call's
// context. The RPC layer resolves the project once, from the x-api-key
// header, and every layer below reads it from here instead of receiving it
// in each signature it passes through.
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

// ErrMissing: the call carries no project. Every call below the RPC layer
// acts in the project the RPC layer resolved, or one an internal caller
// named with NewContext; none falls back to the default project.
var ErrMissing = errors.New("the call names no project")

// FromContext returns the project of the call, or nil when none was put in
// its context.
func FromContext(ctx context.Context) *database.ProjectInfo {
	p, _ := ctx.Value(contextKey{}).(*database.ProjectInfo)
	return p
}

// Of returns the project of the call, or ErrMissing.
func Of(ctx context.Context) (*database.ProjectInfo, error) {
	if p := FromContext(ctx); p != nil {
		return p, nil
	}
	return nil, ErrMissing
}

// ID returns the ID of the call's project, or ErrMissing.
func ID(ctx context.Context) (string, error) {
	p, err := Of(ctx)
	if err != nil {
		return "", err
	}
	return p.ID, nil
}
