package cli_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// TestServerSIGTERMTwice sends a node's process two SIGTERMs in a row while
// it owns documents, as an impatient operator or a supervisor might: the
// process exits cleanly, the second signal cuts the drain short (what was
// not handed on is released as without a drain), and every document ends
// with one owner, the other node, holding every acknowledged change.
func TestServerSIGTERMTwice(t *testing.T) {
	bin := yorkieBinary(t)
	m := testenv.MongoURI(t)
	m.DropWhenDone(t, m.Database)
	addrA, args := nodeArgs(t, m, "--node-ttl", "2s", "--shutdown-drain-timeout", "1m")
	a := startYorkie(t, bin, addrA, args...)
	addrB, args := nodeArgs(t, m, "--node-ttl", "2s")
	b := startYorkie(t, bin, addrB, args...)
	client := func(addr string) v1connect.YorkieServiceClient {
		return v1connect.NewYorkieServiceClient(http.DefaultClient, "http://"+addr)
	}

	var rs []*wire.Replica
	for i := range 6 {
		r := wire.NewReplica(t, client(addrA))
		r.MustAttach(wire.UniqueKey(t, fmt.Sprintf("doc%d", i)))
		r.Edit(3)
		r.MustPushPull()
		r.Edit(2) // not pushed yet when the node goes
		rs = append(rs, r)
	}

	require.NoError(t, syscall.Kill(a.Pid(), syscall.SIGTERM))
	require.NoError(t, syscall.Kill(a.Pid(), syscall.SIGTERM))
	out := waitExit(t, a)
	require.Contains(t, out, "server stopped", "the node must shut down, not die:\n%s", out)
	require.NotContains(t, out, "server failed", out)

	for i, r := range rs {
		r.C = client(addrB)
		poll.Until(t, wire.WaitTimeout, fmt.Sprintf("client %d syncs through the survivor", i), func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := r.PushPull(ctx); err != nil {
				return err
			}
			if len(r.Pending) > 0 {
				return errors.New("changes still unacknowledged")
			}
			return nil
		})
		// A fresh client of the survivor reads every acknowledged change.
		fresh := wire.NewReplica(t, client(addrB))
		fresh.MustAttach(r.DocKey)
		fresh.MustPushPull()
		for seq := uint32(1); seq <= r.Acked; seq++ {
			_, ok := fresh.Pulled[fmt.Sprintf("%s/%d", r.ID, seq)]
			require.True(t, ok, "document %d: acknowledged change %d of %s lost", i, seq, r.ID)
		}
	}
	require.False(t, strings.Contains(b.Output(), "level=ERROR"), "the survivor logged errors:\n%s", b.Output())
}

// yorkie drain, logged in as the server's admin account, drains the node
// it reaches and says what is left; the node then reports draining on
// /healthz and keeps answering. Before logging in it says how to.
func TestCLIDrain(t *testing.T) {
	bin := yorkieBinary(t)
	addr := startServer(t, bin, "--auth-admin-user", "root", "--auth-admin-password", "pa55-word!")
	c := &cli{t: t, bin: bin, config: t.TempDir()}
	if e := c.fails("drain", "--rpc-addr", addr); !strings.Contains(e, "yorkie login") {
		t.Fatalf("drain before login: %s", e)
	}
	c.ok("login", "--username", "root", "--password", "pa55-word!", "--rpc-addr", addr, "--insecure")
	if e := c.fails("drain", "127.0.0.1:1"); !strings.Contains(e, "invalid_argument") {
		t.Fatalf("drain of an unknown node: %s", e)
	}
	out := c.ok("drain")
	require.Contains(t, out, "drained 127.0.0.1:")
	require.Contains(t, out, ": 0 documents left")
	res, err := http.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "a drained node reports draining")
}
