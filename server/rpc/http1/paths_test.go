package http1_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// exchange is one answer of a server, with what differs between servers
// (IDs, protojson's random spaces, Content-Length with them) taken out.
type exchange struct {
	status int
	header http.Header
	body   string
}

// TestStockPathsAnswerAlike sends the same calls, the JS SDK's way, to a
// server on its fast paths and to one with both switched off (net/http and
// protojson alone), and expects the same answers, a pull carrying another
// client's changes included. The fast loop's counter tells which path
// answered: it counts every call on the first server, and the second has
// no fast loop at all.
func TestStockPathsAnswerAlike(t *testing.T) {
	fast := servertest.Start(t, fastPaths)
	stock := servertest.Start(t, func(cfg *server.Config) {
		cfg.DisableFastHTTP1, cfg.DisableFastJSON = true, true
	})
	fastAnswers, served := answers(t, fast)
	if served != float64(len(fastAnswers)) {
		t.Errorf("the fast loop answered %v of %d calls on the fast server", served, len(fastAnswers))
	}
	if pull := fastAnswers[len(fastAnswers)-1].body; !strings.Contains(pull, `"changes":[`) || !strings.Contains(pull, "WRITER64") {
		t.Fatalf("the pull carries no change of the writer: %s", pull)
	}
	stockAnswers, _ := answers(t, stock)
	if n, ok := fastCounter(t, stock); ok {
		t.Errorf("the stock server has a fast loop, which answered %v calls", n)
	}
	for i := range fastAnswers {
		f, s := fastAnswers[i], stockAnswers[i]
		if f.status != s.status || f.body != s.body || !sameHeader(f.header, s.header) {
			t.Errorf("call %d:\nfast:  %d %v %s\nstock: %d %v %s", i, f.status, f.header, f.body, s.status, s.header, s.body)
		}
	}
}

// answers makes the calls of TestStockPathsAnswerAlike on srv, on one raw
// connection, and returns their answers and how many of them the fast loop
// served.
func answers(t *testing.T, srv *server.Server) ([]exchange, float64) {
	c := servertest.Client(t, srv, servertest.ConnectJSON)
	reader := wire.NewReplica(t, c)
	reader.MustAttach("same-doc")
	writer := wire.NewReplica(t, c)
	writer.MustAttach("same-doc")
	writer.Edit(3)
	writer.MustPushPull()
	pull, err := protojson.Marshal(reader.PushPullRequest().Msg)
	wire.Must(t, err, "encode pull")

	requests := []string{
		servertest.RawPost(activatePath, "application/json", `{"clientKey":"same-key"}`),
		servertest.RawPost(activatePath, "application/json; charset=utf-8", `{"clientKey":"same-key"}`),
		servertest.RawPost(activatePath, "application/json", `{"clientKey":`),
		servertest.RawPost(activatePath, "application/json", `{}`),
		servertest.RawPost(activatePath, "application/json", `{"clientKey":"same-key","metadata":{"b":"2","a":"1"}}`),
		servertest.RawPost(activatePath, "application/proto", "\x0a\x08same-key"),
		servertest.RawPost("/yorkie.v1.YorkieService/DeactivateClient", "application/json", `{"clientId":"000000000000000000000000"}`),
		servertest.RawPost(pushPullPath, "application/json", `{"clientId":"x"}`),
		servertest.RawPost(pushPullPath, "application/json", string(pull)),
	}
	ids := strings.NewReplacer(
		writer.ID, "WRITER", reader.ID, "READER", writer.DocID, "DOC",
		base64.StdEncoding.EncodeToString(writer.Actor), "WRITER64",
		base64.StdEncoding.EncodeToString(reader.Actor), "READER64",
	)
	before, _ := fastCounter(t, srv)
	conn := servertest.DialRaw(t, srv)
	var out []exchange
	for _, req := range requests {
		conn.Send(req)
		status, h, body := conn.Answer()
		if strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(body)); err != nil {
				t.Fatalf("answer to %q is not JSON: %v: %s", req, err, body)
			}
			body = compact.String()
		}
		h.Del("Content-Length") // protojson's spaces change it
		h.Del("X-Session-Key")  // names the node
		body = clientIDs.ReplaceAllString(ids.Replace(body), "ID")
		out = append(out, exchange{status: status, header: h, body: body})
	}
	after, _ := fastCounter(t, srv)
	return out, after - before
}
