package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// counting is a loopback webhook that allows every call and counts them.
type counting struct {
	srv  *http.Server
	url  string
	hits atomic.Int64
}

func newCounting() (*counting, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &counting{url: "http://" + l.Addr().String() + "/hook"}
	h.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"allowed":true,"reason":"ok"}`))
	})}
	go func() { _ = h.srv.Serve(l) }()
	return h, nil
}

// runWebhookAddr points project webhooks at loopback, private and
// link-local addresses on a server started with its defaults, and counts
// what the server accepts and what reaches a webhook on loopback.
func runWebhookAddr(ctx context.Context, t *target, _ config, _ *slog.Logger) ([]figure, error) {
	hook, err := newCounting()
	if err != nil {
		return nil, err
	}
	defer hook.srv.Close()
	p, err := t.project(ctx, "addr-attacker", nil)
	if err != nil {
		return nil, err
	}
	urls := []string{"http://169.254.169.254/latest/meta-data/", hook.url, "http://10.0.0.1/hook", "http://[::1]:8080/hook"}
	accepted := map[string]int{}
	for _, u := range urls {
		_, err := t.admin.UpdateProject(ctx, authorized(t, &api.UpdateProjectRequest{Id: p.GetId(), Fields: &api.UpdatableProjectFields{
			AuthWebhookUrl:  wrapperspb.String(u),
			EventWebhookUrl: wrapperspb.String(u),
		}}))
		accepted[code(err)]++
	}

	// An auth webhook on loopback: does the server call it?
	if _, err := t.admin.UpdateProject(ctx, authorized(t, &api.UpdateProjectRequest{Id: p.GetId(), Fields: &api.UpdatableProjectFields{
		AuthWebhookUrl:             wrapperspb.String(hook.url),
		AuthWebhookMethods:         &api.UpdatableProjectFields_AuthWebhookMethods{Methods: []string{"ActivateClient"}},
		AuthWebhookRequestTimeout:  wrapperspb.String("200ms"),
		AuthWebhookMaxRetries:      wrapperspb.UInt64(0),
		AuthWebhookMinWaitInterval: wrapperspb.String("10ms"),
		AuthWebhookMaxWaitInterval: wrapperspb.String("10ms"),
	}})); err != nil {
		return nil, fmt.Errorf("point the webhooks at loopback: %w", err)
	}
	c, tr := t.yorkie(p.GetPublicKey())
	defer tr.CloseIdleConnections()
	const calls = 5
	outcomes := map[string]int{}
	for i := range calls {
		req := connect.NewRequest(&api.ActivateClientRequest{ClientKey: fmt.Sprintf("probe%d", i)})
		req.Header().Set("Authorization", fmt.Sprintf("token-%d", i)) // no cached answer
		_, err := c.ActivateClient(ctx, req)
		outcomes[code(err)]++
	}
	authHits := hook.hits.Load()

	// An event webhook on loopback, in a project of its own: one document
	// changed, then the debounce (1 s) and some.
	events, err := newCounting()
	if err != nil {
		return nil, err
	}
	defer events.srv.Close()
	ep, err := t.project(ctx, "addr-events", eventFields(events.url))
	if err != nil {
		return nil, err
	}
	ec, etr := t.yorkie(ep.GetPublicKey())
	defer etr.CloseIdleConnections()
	if _, err := editOnce(ctx, ec, "addr-doc"); err != nil {
		return nil, err
	}
	time.Sleep(3 * time.Second)
	return []figure{
		{"UpdateProject with webhooks at 169.254.169.254, 127.0.0.1, 10.0.0.1, [::1]", fmt.Sprintf("%d: %s", len(urls), outcomeString(accepted))},
		{"ActivateClient with the auth webhook on 127.0.0.1: answers / calls reaching the webhook", fmt.Sprintf("%s / %d of %d", outcomeString(outcomes), authHits, calls)},
		{"event webhook on 127.0.0.1: deliveries for one changed document, 3 s after", strconv.FormatInt(events.hits.Load(), 10)},
	}, nil
}
