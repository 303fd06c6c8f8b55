package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"

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
			got := toConnectError(wrapped)
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
		got := toConnectError(errors.New("secret path"))
		var cerr *connect.Error
		if !errors.As(got, &cerr) || cerr.Message() != "internal error" {
			t.Fatalf("got %v, want an internal error that does not show its cause", got)
		}
	})
	t.Run("connect errors pass through", func(t *testing.T) {
		in := connect.NewError(connect.CodeUnavailable, errors.New("elsewhere"))
		got := toConnectError(fmt.Errorf("route: %w", in))
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

// TestInternalErrorLoggedOnce follows an unexpected error from the handler
// through the interceptors: the client reads only "internal error", and the
// log holds one record of the call, with the cause the client did not see.
func TestInternalErrorLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	l := &failureLogger{logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	call := l.WrapUnary(func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) {
		return nil, toConnectError(errors.New("disk on fire"))
	})
	_, err := call(context.Background(), connect.NewRequest(&emptypb.Empty{}))
	var cerr *connect.Error
	if !errors.As(err, &cerr) || cerr.Code() != connect.CodeInternal || cerr.Message() != "internal error" {
		t.Fatalf("client got %v, want an internal error that does not show its cause", err)
	}
	records := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(records) != 1 {
		t.Fatalf("logged %d records, want 1:\n%s", len(records), logs.String())
	}
	var rec struct {
		Level, Error string
	}
	if err := json.Unmarshal([]byte(records[0]), &rec); err != nil {
		t.Fatalf("log record %q: %v", records[0], err)
	}
	if rec.Level != "ERROR" || rec.Error != "disk on fire" {
		t.Fatalf("logged %s %q, want ERROR with the cause %q", rec.Level, rec.Error, "disk on fire")
	}
}
