package interceptor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"google.golang.org/protobuf/types/known/emptypb"
)

// TestInternalErrorLoggedOnce follows an unexpected error from the handler
// through the interceptors: the client reads only "internal error", and the
// log holds one record of the call, with the cause the client did not see.
func TestInternalErrorLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	l := NewFailureLogger(slog.New(slog.NewJSONHandler(&logs, nil)))
	call := l.WrapUnary(func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) {
		return nil, errinfo.ToConnect(errors.New("disk on fire"))
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
