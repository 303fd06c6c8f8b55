package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

func TestToConnectError(t *testing.T) {
	cases := []struct {
		err  error
		code connect.Code
		name string
	}{
		{backend.ErrClientNotFound, connect.CodeNotFound, CodeClientNotFound},
		{backend.ErrClientNotActivated, connect.CodeFailedPrecondition, CodeClientNotActivated},
		{backend.ErrDocumentNotFound, connect.CodeNotFound, CodeDocumentNotFound},
		{backend.ErrDocumentNotAttached, connect.CodeFailedPrecondition, CodeDocumentNotAttached},
		{backend.ErrDocumentRemoved, connect.CodeFailedPrecondition, CodeDocumentRemoved},
		{backend.ErrInvalidClientSeq, connect.CodeInvalidArgument, CodeInvalidClientSeq},
		{backend.ErrInvalidChangePack, connect.CodeInvalidArgument, CodeInvalidChangePack},
		{backend.ErrShuttingDown, connect.CodeUnavailable, CodeShuttingDown},
		{database.ErrUnavailable, connect.CodeUnavailable, CodeUnavailable},
		{database.ErrFenced, connect.CodeUnavailable, CodeUnavailable},
		{database.ErrConflict, connect.CodeUnavailable, CodeUnavailable},
		{database.ErrClientNotFound, connect.CodeNotFound, CodeClientNotFound},
		{database.ErrAttachmentNotFound, connect.CodeFailedPrecondition, CodeDocumentNotAttached},
		{context.DeadlineExceeded, connect.CodeDeadlineExceeded, CodeDeadlineExceeded},
		{errors.New("disk on fire"), connect.CodeInternal, CodeInternal},
	}
	for _, tc := range cases {
		t.Run(tc.err.Error(), func(t *testing.T) {
			wrapped := fmt.Errorf("pushpull doc 1: %w", tc.err)
			got := toConnectError(context.Background(), slog.New(slog.DiscardHandler), "/p", wrapped)
			var cerr *connect.Error
			if !errors.As(got, &cerr) {
				t.Fatalf("got %T, want *connect.Error", got)
			}
			if cerr.Code() != tc.code || errorName(cerr) != tc.name {
				t.Fatalf("got %s %q, want %s %q", cerr.Code(), errorName(cerr), tc.code, tc.name)
			}
		})
	}
	t.Run("internal hides the cause", func(t *testing.T) {
		got := toConnectError(context.Background(), slog.New(slog.DiscardHandler), "/p", errors.New("secret path"))
		var cerr *connect.Error
		if !errors.As(got, &cerr) || cerr.Message() != "internal error" {
			t.Fatalf("got %v, want an internal error that does not show its cause", got)
		}
	})
	t.Run("connect errors pass through", func(t *testing.T) {
		in := connect.NewError(connect.CodeUnavailable, errors.New("elsewhere"))
		got := toConnectError(context.Background(), slog.New(slog.DiscardHandler), "/p", fmt.Errorf("route: %w", in))
		if got != in {
			t.Fatalf("got %v, want the router's error unchanged", got)
		}
	})
}

func TestValidateClientID(t *testing.T) {
	for _, id := range []string{"00", "0123456789abcdef01234567"} {
		if err := validateClientID(id); err != nil {
			t.Errorf("validateClientID(%q): %v", id, err)
		}
	}
	for _, id := range []string{"", "0", "0g", "AB", "0123456789ABCDEF01234567", "ab cd", "ab\x00c"} {
		if err := validateClientID(id); err == nil {
			t.Errorf("validateClientID(%q) accepted a malformed ID", id)
		}
	}
}

func TestValidateDocumentKey(t *testing.T) {
	for _, key := range []string{"a", "doc-1", "Room_2.v~x"} {
		if err := validateDocumentKey(key); err != nil {
			t.Errorf("validateDocumentKey(%q): %v", key, err)
		}
	}
	long := make([]byte, maxKeyLength+1)
	for i := range long {
		long[i] = 'k'
	}
	for _, key := range []string{"", "a b", "a/b", "é", string(long)} {
		if err := validateDocumentKey(key); err == nil {
			t.Errorf("validateDocumentKey(%q) accepted a bad key", key)
		}
	}
}
