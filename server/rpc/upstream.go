package rpc

import (
	"context"
	"errors"
	"time"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	upmetrics "github.com/yorkie-affinity/yorkie/server/metrics"
	"github.com/yorkie-affinity/yorkie/server/project"
)

// docEventNames spell document event types as upstream's doc_event_type
// label does.
var docEventNames = map[api.DocEventType]string{
	api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED:   "document-changed",
	api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_WATCHED:   "document-watched",
	api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_UNWATCHED: "document-unwatched",
	api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_BROADCAST: "document-broadcast",
}

// watchEventSent records a document event sent on a Watch stream.
func (s *Service) watchEventSent(ctx context.Context, ev *api.DocEvent) {
	if s.upstream == nil {
		return
	}
	s.upstream.WatchEvent(project.FromContext(ctx), docEventNames[ev.GetType()], len(ev.GetBody().GetPayload()))
}

// packResponse is what every answer of a pack exchange is.
type packResponse interface{ GetChangePack() *api.ChangePack }

// servePack runs a pack exchange this node serves as the owner and records
// it in upstream's yorkie_pushpull_* series.
func servePack[Res any](ctx context.Context, s *Service, pushed *api.ChangePack, serve func() (*Res, error)) (*Res, error) {
	if s.upstream == nil {
		return serve()
	}
	start := time.Now()
	resp, err := serve()
	if errors.Is(err, backend.ErrStaleRoute) {
		return resp, err // routed again, and counted then
	}
	var answer *api.ChangePack
	if r, ok := any(resp).(packResponse); ok && err == nil {
		answer = r.GetChangePack()
	}
	recvChanges, recvOps := packCounts(pushed)
	sentChanges, sentOps := packCounts(answer)
	s.upstream.PushPull(project.FromContext(ctx), upmetrics.Pack{
		ReceivedChanges: recvChanges, ReceivedOperations: recvOps,
		SentChanges: sentChanges, SentOperations: sentOps,
		SnapshotBytes: len(answer.GetSnapshot()),
	}, time.Since(start), err)
	return resp, err
}

// packCounts returns the changes and operations of a pack.
func packCounts(p *api.ChangePack) (changes, ops int) {
	for _, c := range p.GetChanges() {
		ops += len(c.GetOperations())
	}
	return len(p.GetChanges()), ops
}
