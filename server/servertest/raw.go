package servertest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server"
)

// RawConn is a TCP connection to a server's RPC port on which a test writes
// HTTP/1.1 by hand, to choose its framing and timing byte by byte.
type RawConn struct {
	net.Conn
	// R reads what the server sends.
	R *bufio.Reader
	t testing.TB
}

// DialRaw connects to srv's RPC port; the connection closes when the test
// ends, and has a generous deadline so that a silent server fails the test.
func DialRaw(t testing.TB, srv *server.Server) *RawConn {
	t.Helper()
	c, err := net.Dial("tcp", srv.RPCAddr())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return &RawConn{Conn: c, R: bufio.NewReader(c), t: t}
}

// Send writes s.
func (c *RawConn) Send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.Conn, s); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// Answer reads one response: its status, its headers without Date, and its
// body.
func (c *RawConn) Answer() (int, http.Header, string) {
	c.t.Helper()
	resp, err := http.ReadResponse(c.R, nil)
	if err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("read body: %v", err)
	}
	resp.Header.Del("Date")
	return resp.StatusCode, resp.Header, string(body)
}

// RawPost spells an HTTP/1.1 POST as the JS SDK's fetch does on Node, with
// extra header lines; an empty contentType sends none.
func RawPost(path, contentType, body string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: keep-alive\r\n", path)
	if contentType != "" {
		fmt.Fprintf(&b, "content-type: %s\r\n", contentType)
	}
	b.WriteString("connect-protocol-version: 1\r\naccept: */*\r\nuser-agent: node\r\n")
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	fmt.Fprintf(&b, "content-length: %d\r\n\r\n%s", len(body), body)
	return b.String()
}

// RawPreflight spells a browser's CORS preflight of a POST to path.
func RawPreflight(path string) string {
	return "OPTIONS " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://app.example\r\n" +
		"Access-Control-Request-Method: POST\r\n\r\n"
}
