package http1

import (
	"bufio"
	"bytes"
	"net/http"
	"slices"
	"testing"
	"time"
)

// FuzzHTTP1Head checks the fast loop's request parser against net/http's:
// a head the fast loop serves itself must mean the same to net/http (method,
// path, host, body length, every header), so no request can be framed one way
// here and another way by a proxy or by the fallback. Heads it does not take
// go to net/http unchanged, which needs no check.
func FuzzHTTP1Head(f *testing.F) {
	const path = "/yorkie.v1.YorkieService/PushPullChanges"
	srv, err := New(Config{
		Fallback:        &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Minute},
		Paths:           []string{path},
		MaxRequestBytes: 1 << 20,
		ReadBodyTimeout: time.Minute,
	})
	if err != nil {
		f.Fatal(err)
	}
	fc := &fastConn{srv: srv}
	for _, seed := range []string{
		"POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n",
		"POST " + path + " HTTP/1.1\r\nhost: h\r\ncontent-type: application/proto\r\ncontent-length: 0\r\nx-shard-key: a/b\r\nx-shard-key: c\r\n\r\n",
		"POST " + path + " HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
		"POST " + path + " HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n",
		"POST " + path + " HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: +2\r\n\r\n",
		"POST " + path + " HTTP/1.1\r\nHost: h\r\n Content-Length: 2\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n",
		"POST " + path + "?x=1 HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The loop hands the parser the head through the first blank line,
		// and hands off heads with a bare LF blank line.
		end := bytes.Index(data, []byte("\r\n\r\n"))
		if end < 0 || bytes.Contains(data[:end], []byte("\n\n")) {
			return
		}
		head := data[:end+4]
		req, bodyLen, ok := fc.parse(head)
		if !ok {
			return
		}
		full := append(slices.Clone(head), make([]byte, bodyLen)...)
		want, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(full)))
		if err != nil {
			t.Fatalf("the fast loop serves a head net/http rejects: %q: %v", head, err)
		}
		switch {
		case want.Method != req.Method:
			t.Fatalf("method %q, net/http %q: %q", req.Method, want.Method, head)
		case want.RequestURI != req.RequestURI || want.URL.Path != req.URL.Path || want.URL.RawQuery != "":
			t.Fatalf("target %q, net/http %q: %q", req.RequestURI, want.RequestURI, head)
		case want.Host != req.Host:
			t.Fatalf("host %q, net/http %q: %q", req.Host, want.Host, head)
		case want.ContentLength != int64(bodyLen) || len(want.TransferEncoding) != 0:
			t.Fatalf("body length %d, net/http %d %v: %q", bodyLen, want.ContentLength, want.TransferEncoding, head)
		}
		for k, vs := range req.Header {
			if !slices.Equal(vs, want.Header[k]) {
				t.Fatalf("header %s = %q, net/http %q: %q", k, vs, want.Header[k], head)
			}
		}
		for k := range want.Header {
			if _, ok := req.Header[k]; !ok && k != "Host" {
				t.Fatalf("header %s dropped (net/http has %q): %q", k, want.Header[k], head)
			}
		}
	})
}
