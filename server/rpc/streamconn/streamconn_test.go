package streamconn_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// rawWatch is a Watch stream opened by hand over one TCP connection, as the
// JS SDK opens it: Connect JSON over HTTP/1.1.
type rawWatch struct {
	conn net.Conn
	resp *http.Response
}

// envelope frames one Connect message.
func envelope(flags byte, data []byte) []byte {
	out := []byte{flags}
	out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
	return append(out, data...)
}

// openRaw sends a Watch request with body and extra header lines and reads
// the response head.
func openRaw(t *testing.T, srv *server.Server, body []byte, extra string) *rawWatch {
	t.Helper()
	conn, err := net.Dial("tcp", srv.RPCAddr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	head := fmt.Sprintf("POST /yorkie.v1.YorkieService/Watch HTTP/1.1\r\nHost: %s\r\n"+
		"Content-Type: application/connect+json\r\nConnect-Protocol-Version: 1\r\n%sContent-Length: %d\r\n\r\n",
		srv.RPCAddr(), extra, len(body))
	_, err = conn.Write(append([]byte(head), body...))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/connect+json", resp.Header.Get("Content-Type"))
	return &rawWatch{conn: conn, resp: resp}
}

// watchBody is the JSON Watch request of r's document.
func watchBody(r *wire.Replica) []byte {
	data, err := protojson.Marshal(&api.WatchRequest{ClientId: r.ID, Resources: []*api.ResourceDescriptor{{
		Resource: &api.ResourceDescriptor_Document{Document: &api.DocumentDescriptor{DocumentId: r.DocID}},
	}}})
	if err != nil {
		panic(err)
	}
	return data
}

// next reads the next envelope.
func (w *rawWatch) next(t *testing.T) (byte, []byte) {
	t.Helper()
	var prefix [5]byte
	_, err := io.ReadFull(w.resp.Body, prefix[:])
	require.NoError(t, err)
	data := make([]byte, binary.BigEndian.Uint32(prefix[1:]))
	_, err = io.ReadFull(w.resp.Body, data)
	require.NoError(t, err)
	return prefix[0], data
}

// message reads the next message, which must not be the end of the stream.
func (w *rawWatch) message(t *testing.T) *api.WatchResponse {
	t.Helper()
	flags, data := w.next(t)
	require.Zero(t, flags, "end of stream: %s", data)
	m := &api.WatchResponse{}
	require.NoError(t, protojson.Unmarshal(data, m))
	return m
}

// endStream is Connect's end-stream message as a client reads it.
type endStream struct {
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details []struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"details"`
	} `json:"error"`
}

// end reads the end-stream message and then the end of the body.
func (w *rawWatch) end(t *testing.T) endStream {
	t.Helper()
	flags, data := w.next(t)
	require.Equal(t, byte(2), flags, "want the end-stream message, got %s", data)
	var end endStream
	require.NoError(t, json.Unmarshal(data, &end))
	rest, err := io.ReadAll(w.resp.Body)
	require.NoError(t, err)
	assert.Empty(t, rest)
	return end
}

func attachedPair(t *testing.T, srv *server.Server) (a, b *wire.Replica) {
	t.Helper()
	c := servertest.Client(t, srv, servertest.ConnectProto)
	docKey := wire.UniqueKey(t, "doc")
	a, b = wire.NewReplica(t, c), wire.NewReplica(t, c)
	a.MustAttach(docKey)
	b.MustAttach(docKey)
	return a, b
}

func docEvent(t *testing.T, m *api.WatchResponse) *api.DocEvent {
	t.Helper()
	ev := m.GetEvent().GetDocEvent().GetEvent()
	require.NotNil(t, ev, "not a document event: %v", m)
	return ev
}

// TestDetachedWatchFollowsItsClient: a Watch stream served on its own
// connection sends the initialization and the events, and ends when its
// client closes the connection, as the other watcher sees.
func TestDetachedWatchFollowsItsClient(t *testing.T) {
	srv := servertest.Start(t)
	a, b := attachedPair(t, srv)
	aw := openRaw(t, srv, envelope(0, watchBody(a)), "")
	// The connection ends with the stream: the detached path says so.
	assert.True(t, aw.resp.Close, "the detached stream's head says Connection: close")
	di := aw.message(t).GetInitialization().GetResourceInits()[0].GetDocumentInit()
	assert.Equal(t, a.DocID, di.GetDocumentId())
	assert.Equal(t, []string{a.ID}, di.GetClientIds())

	bw := openRaw(t, srv, envelope(0, watchBody(b)), "")
	assert.ElementsMatch(t, []string{a.ID, b.ID},
		bw.message(t).GetInitialization().GetResourceInits()[0].GetDocumentInit().GetClientIds())
	ev := docEvent(t, aw.message(t))
	assert.Equal(t, api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_WATCHED, ev.GetType())
	assert.Equal(t, b.ID, ev.GetPublisher())

	b.Edit(1)
	b.MustPushPull()
	ev = docEvent(t, aw.message(t))
	assert.Equal(t, api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED, ev.GetType())

	// b's client goes away in the middle of its stream.
	require.NoError(t, bw.conn.Close())
	ev = docEvent(t, aw.message(t))
	assert.Equal(t, api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_UNWATCHED, ev.GetType())
	assert.Equal(t, b.ID, ev.GetPublisher())
}

// TestDetachedWatchEndsAtShutdown: shutting the server down ends a detached
// stream with Connect's end-stream message, code unavailable and the
// shutting-down ErrorInfo, and Shutdown waits for it.
func TestDetachedWatchEndsAtShutdown(t *testing.T) {
	srv := servertest.Start(t)
	a, _ := attachedPair(t, srv)
	aw := openRaw(t, srv, envelope(0, watchBody(a)), "")
	require.NotNil(t, aw.message(t).GetInitialization())

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done <- srv.Shutdown(ctx)
	}()
	end := aw.end(t)
	require.NotNil(t, end.Error)
	assert.Equal(t, "unavailable", end.Error.Code)
	require.NotEmpty(t, end.Error.Details)
	assert.Equal(t, "google.rpc.ErrorInfo", end.Error.Details[0].Type)
	require.NoError(t, <-done)
}

// TestDetachedWatchCompressedRequest: a gzip-compressed request is read as
// connect reads it, and the stream is served.
func TestDetachedWatchCompressedRequest(t *testing.T) {
	srv := servertest.Start(t)
	a, _ := attachedPair(t, srv)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, err := zw.Write(watchBody(a))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	aw := openRaw(t, srv, envelope(1, zipped.Bytes()), "Connect-Content-Encoding: gzip\r\nConnect-Accept-Encoding: gzip\r\n")
	// Messages go uncompressed, which a client accepting gzip also reads.
	assert.Empty(t, aw.resp.Header.Get("Connect-Content-Encoding"))
	di := aw.message(t).GetInitialization().GetResourceInits()[0].GetDocumentInit()
	assert.Equal(t, []string{a.ID}, di.GetClientIds())
}

// TestDetachedWatchBadRequest: a body that is not a Watch request, or a
// Watch of a document the client did not attach, ends the stream with a
// clear error and no stream is left behind.
func TestDetachedWatchBadRequest(t *testing.T) {
	srv := servertest.Start(t)
	a, _ := attachedPair(t, srv)

	end := openRaw(t, srv, envelope(0, []byte(`{"clientId":`)), "").end(t)
	require.NotNil(t, end.Error)
	assert.Equal(t, "invalid_argument", end.Error.Code)

	other := *a
	other.DocID = "0123456789abcdef01234567"
	end = openRaw(t, srv, envelope(0, watchBody(&other)), "").end(t)
	require.NotNil(t, end.Error)
	assert.NotEmpty(t, end.Error.Message)
	assert.NotEqual(t, "unknown", end.Error.Code)
}

// streamGoroutines counts the goroutines serving detached streams: running
// a step, waiting in one, or waiting for the next.
func streamGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "streamconn.(*Stream)") || strings.Contains(g, "streamconn.(*Server).stepper") || strings.Contains(g, "rpc.(*watchFollow") {
			count++
		}
	}
	return count
}

// TestIdleDetachedStreamsHoldNoGoroutine: once their initializations are
// out, idle detached streams hold no goroutine (their subscriptions wake
// them), and every one of them still gets the next event and, when its
// client leaves, the other side's UNWATCHED.
func TestIdleDetachedStreamsHoldNoGoroutine(t *testing.T) {
	const n = 50
	srv := servertest.Start(t)
	as := make([]*wire.Replica, n)
	bs := make([]*wire.Replica, n)
	for i := range n {
		as[i], bs[i] = attachedPair(t, srv)
	}
	before := runtime.NumGoroutine()
	ws := make([]*rawWatch, n)
	for i, a := range as {
		ws[i] = openRaw(t, srv, envelope(0, watchBody(a)), "")
		require.NotNil(t, ws[i].message(t).GetInitialization())
	}
	// The last steps return just after their writes, and the goroutines
	// that ran them exit once no step came for a while: wait for them. One
	// goroutine for all streams notices hang-ups.
	require.Eventually(t, func() bool {
		return streamGoroutines() == 0 && runtime.NumGoroutine()-before <= n/10
	}, time.Minute, 10*time.Millisecond, "goroutines still serving idle detached streams")

	for _, b := range bs {
		b.Edit(1)
		b.MustPushPull()
	}
	for i, w := range ws {
		ev := docEvent(t, w.message(t))
		assert.Equal(t, api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED, ev.GetType())
		assert.Equal(t, bs[i].ID, ev.GetPublisher())
	}

	// b watches too, then a's client leaves: b hears of it.
	bw := openRaw(t, srv, envelope(0, watchBody(bs[0])), "")
	require.NotNil(t, bw.message(t).GetInitialization())
	require.Equal(t, api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_WATCHED, docEvent(t, ws[0].message(t)).GetType())
	require.NoError(t, ws[0].conn.Close())
	ev := docEvent(t, bw.message(t))
	assert.Equal(t, api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_UNWATCHED, ev.GetType())
	assert.Equal(t, as[0].ID, ev.GetPublisher())
}
