package integration_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// fuzzProcedure is one YorkieService method as the fuzz test posts to it.
type fuzzProcedure struct {
	path      string
	streaming bool
}

// fuzzProcedures lists every method of the YorkieService.
func fuzzProcedures() []fuzzProcedure {
	svc := api.File_yorkie_v1_yorkie_proto.Services().ByName("YorkieService")
	methods := svc.Methods()
	out := make([]fuzzProcedure, 0, methods.Len())
	for i := range methods.Len() {
		m := methods.Get(i)
		out = append(out, fuzzProcedure{
			path:      fmt.Sprintf("/%s/%s", svc.FullName(), m.Name()),
			streaming: m.IsStreamingServer(),
		})
	}
	return out
}

// envelope frames a streaming request body as the Connect protocol does.
func envelope(body []byte) []byte {
	out := make([]byte, 5, 5+len(body))
	binary.BigEndian.PutUint32(out[1:], uint32(len(body)))
	return append(out, body...)
}

// FuzzRequestDecoding posts arbitrary bytes as JSON and binary bodies to every
// procedure. The server must answer each with a well-formed response that is
// not an internal error, and must keep serving a well-behaved pair of clients
// whose document state stays consistent.
func FuzzRequestDecoding(f *testing.F) {
	srv := servertest.Start(f, func(cfg *server.Config) { cfg.MaxRequestBytes = 64 << 10 })
	c := servertest.Client(f, srv, servertest.ConnectJSON)
	procs := fuzzProcedures()

	// Good clients on their own document, checked after every input.
	goodKey := wire.UniqueKey(f, "good")
	writer, reader := newReplica(f, c), newReplica(f, c)
	writer.MustAttach(goodKey)
	reader.MustAttach(goodKey)

	// Seeds are valid requests of a separate client and document, so mutations
	// reach the backend's checks, not only the decoder's.
	fz := newReplica(f, c)
	fz.MustAttach(wire.UniqueKey(f, "fuzz"))
	fz.Edit(1)
	pack := fz.Pack()
	seeds := map[string]proto.Message{
		"ActivateClient":   &api.ActivateClientRequest{ClientKey: "fuzz-client", Metadata: map[string]string{"k": "v"}},
		"DeactivateClient": &api.DeactivateClientRequest{ClientId: "00112233445566778899aabb"},
		"AttachDocument":   &api.AttachDocumentRequest{ClientId: fz.ID, ChangePack: &api.ChangePack{DocumentKey: "fuzz-doc", Checkpoint: &api.Checkpoint{}}},
		"DetachDocument":   &api.DetachDocumentRequest{ClientId: fz.ID, DocumentId: fz.DocID, ChangePack: pack},
		"RemoveDocument":   &api.RemoveDocumentRequest{ClientId: fz.ID, DocumentId: fz.DocID, ChangePack: pack},
		"PushPullChanges":  &api.PushPullChangesRequest{ClientId: fz.ID, DocumentId: fz.DocID, ChangePack: pack},
		"Watch": &api.WatchRequest{ClientId: fz.ID, Resources: []*api.ResourceDescriptor{{
			Resource: &api.ResourceDescriptor_Document{Document: &api.DocumentDescriptor{DocumentId: fz.DocID}},
		}}},
		"WatchDocument": &api.WatchDocumentRequest{ClientId: fz.ID, DocumentId: fz.DocID},
	}
	for i, p := range procs {
		name := p.path[strings.LastIndex(p.path, "/")+1:]
		msg, ok := seeds[name]
		if !ok {
			continue
		}
		js, err := protojson.Marshal(msg)
		wire.Must(f, err, "marshal json seed")
		bin, err := proto.Marshal(msg)
		wire.Must(f, err, "marshal proto seed")
		f.Add(uint8(i), uint8(0), js)
		f.Add(uint8(i), uint8(1), bin)
	}
	f.Add(uint8(0), uint8(0), []byte(`{"clientKey": 12}`))
	f.Add(uint8(5), uint8(0), []byte(`{"changePack": {"changes": [{"id": {"actorId": "!!"}}]}}`))
	f.Add(uint8(5), uint8(1), []byte{0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f})

	hc := servertest.HTTPClient(f, servertest.ConnectJSON)
	base := servertest.BaseURL(srv)

	f.Fuzz(func(t *testing.T, proc, encoding uint8, body []byte) {
		p := procs[int(proc)%len(procs)]
		enc := "json"
		if encoding%2 == 1 {
			enc = "proto"
		}
		ctype := "application/" + enc
		payload := body
		if p.streaming {
			ctype = "application/connect+" + enc
			payload = envelope(body)
		}
		ctx := wire.Context(t)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+p.path, bytes.NewReader(payload))
		wire.Must(t, err, "build request")
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Connect-Protocol-Version", "1")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("POST %s (%s): %v", p.path, ctype, err)
		}
		// A stream that was accepted is cut after its first message: the
		// check is that the server answered sanely, not how the stream goes on.
		var got []byte
		if p.streaming && resp.StatusCode == http.StatusOK {
			got = make([]byte, 4096)
			n, _ := io.ReadAtLeast(resp.Body, got, 5)
			got = got[:n]
		} else {
			got, err = io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("read answer of %s: %v", p.path, err)
			}
		}
		resp.Body.Close()
		// Internal and unknown errors are HTTP 500 in the Connect protocol.
		if resp.StatusCode == http.StatusInternalServerError {
			t.Fatalf("POST %s (%s): HTTP %d %s", p.path, ctype, resp.StatusCode, got)
		}
		for _, bad := range []string{`"code":"internal"`, `"code":"unknown"`} {
			if bytes.Contains(got, []byte(bad)) {
				t.Fatalf("POST %s (%s): %s", p.path, ctype, got)
			}
		}

		// The good clients still sync.
		writer.T, reader.T = t, t
		writer.Edit(1)
		writer.MustPushPull()
		if len(writer.Pending) != 0 {
			t.Fatalf("writer's change not acknowledged after garbage")
		}
		reader.MustPushPull()
		if n := reader.Seen[fmt.Sprintf("%s/%d", writer.ID, writer.LastSeq)]; n != 1 {
			t.Fatalf("reader pulled the writer's change %d %d times, want once", writer.LastSeq, n)
		}
	})
}
