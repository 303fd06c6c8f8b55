package errinfo

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/pubsub"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

func TestToConnectError(t *testing.T) {
	cases := []struct {
		err  error
		code connect.Code
		name string
	}{
		{database.ErrClientNotFound, connect.CodeNotFound, CodeClientNotFound},
		{backend.ErrClientNotActivated, connect.CodeFailedPrecondition, CodeClientNotActivated},
		{database.ErrDocumentNotFound, connect.CodeNotFound, CodeDocumentNotFound},
		{backend.ErrDocumentNotAttached, connect.CodeFailedPrecondition, CodeDocumentNotAttached},
		{backend.ErrDocumentRemoved, connect.CodeFailedPrecondition, CodeDocumentRemoved},
		{backend.ErrInvalidClientSeq, connect.CodeInvalidArgument, CodeInvalidClientSeq},
		{backend.ErrInvalidChangePack, connect.CodeInvalidArgument, CodeInvalidChangePack},
		{backend.ErrEpochMismatch, connect.CodeFailedPrecondition, CodeEpochMismatch},
		{fault.ErrShuttingDown, connect.CodeUnavailable, CodeShuttingDown},
		{affinity.ErrStopped, connect.CodeUnavailable, CodeShuttingDown},
		{sessionstore.ErrUnavailable, connect.CodeUnavailable, CodeUnavailable},
		{sessionstore.ErrNotMember, connect.CodeUnavailable, CodeUnavailable},
		{sessionstore.ErrLeaseLost, connect.CodeUnavailable, CodeUnavailable},
		{backend.ErrDocumentReleased, connect.CodeUnavailable, CodeUnavailable},
		{pubsub.ErrSlowSubscriber, connect.CodeUnavailable, CodeUnavailable},
		{channel.ErrSlowWatcher, connect.CodeUnavailable, CodeUnavailable},
		{channel.ErrReleased, connect.CodeUnavailable, CodeUnavailable},
		{routing.ErrOwnerUnreachable, connect.CodeUnavailable, CodeUnavailable},
		{database.ErrUnavailable, connect.CodeUnavailable, CodeUnavailable},
		{database.ErrFenced, connect.CodeUnavailable, CodeUnavailable},
		{database.ErrConflict, connect.CodeUnavailable, CodeUnavailable},
		{database.ErrAttachmentNotFound, connect.CodeFailedPrecondition, CodeDocumentNotAttached},
		{context.DeadlineExceeded, connect.CodeDeadlineExceeded, CodeDeadlineExceeded},
		{errors.New("disk on fire"), connect.CodeInternal, CodeInternal},
	}
	for _, tc := range cases {
		t.Run(tc.err.Error(), func(t *testing.T) {
			wrapped := fmt.Errorf("pushpull doc 1: %w", tc.err)
			got := ToConnect(wrapped)
			var cerr *connect.Error
			if !errors.As(got, &cerr) {
				t.Fatalf("got %T, want *connect.Error", got)
			}
			if cerr.Code() != tc.code || Name(cerr) != tc.name {
				t.Fatalf("got %s %q, want %s %q", cerr.Code(), Name(cerr), tc.code, tc.name)
			}
		})
	}
	t.Run("internal hides the cause", func(t *testing.T) {
		got := ToConnect(errors.New("secret path"))
		var cerr *connect.Error
		if !errors.As(got, &cerr) || cerr.Message() != "internal error" {
			t.Fatalf("got %v, want an internal error that does not show its cause", got)
		}
	})
	t.Run("connect errors pass through", func(t *testing.T) {
		in := connect.NewError(connect.CodeUnavailable, errors.New("elsewhere"))
		got := ToConnect(fmt.Errorf("route: %w", in))
		if got != in {
			t.Fatalf("got %v, want the router's error unchanged", got)
		}
	})
}
