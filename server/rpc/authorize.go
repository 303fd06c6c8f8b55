package rpc

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/webhook"
	"github.com/yorkie-affinity/yorkie/server/webhook/authwebhook"
)

// Auth asks each project's auth webhook whether a call may go on.
type Auth struct {
	// Client asks the webhooks and caches their answers. Required.
	Client *authwebhook.Client
	// Policy returns how a project's webhook is called: timeout, retries
	// and backoff. Required.
	Policy func(*database.ProjectInfo) webhook.Policy
	// Forwarded reports whether a request was forwarded by another node of
	// the cluster (it carries the forwarding mark and the cluster secret).
	// That node asked the webhook already: a call is authorized once, where
	// the client sent it, not once per hop. Nil: no call is forwarded.
	Forwarded func(http.Header) bool
}

// authorizationHeader carries the client's token (the SDK's authTokenInjector).
const authorizationHeader = "Authorization"

// The auth webhook's names of the YorkieService methods, upstream's; most
// are the RPC's own name.
const (
	methodPushPull = "PushPull"
	methodWatch    = "Watch"
)

// methodOf returns the webhook's name of procedure ("/pkg.Service/Method").
func methodOf(procedure string) string {
	m := procedure[strings.LastIndexByte(procedure, '/')+1:]
	if m == "PushPullChanges" {
		return methodPushPull
	}
	return m
}

// packVerb is the access a pack needs: writing if it carries changes.
func packVerb(pack *api.ChangePack) authwebhook.Verb {
	if len(pack.GetChanges()) > 0 {
		return authwebhook.ReadWrite
	}
	return authwebhook.Read
}

// attributes names what a call touches, computed only when the project's
// webhook guards the call: a document addressed by ID needs its key.
type attributes func(ctx context.Context) ([]authwebhook.Attribute, error)

// noAttributes is for calls on no document: upstream sends null.
func noAttributes(context.Context) ([]authwebhook.Attribute, error) { return nil, nil }

// oneKey names one document or channel key with its verb.
func oneKey(key string, verb authwebhook.Verb) attributes {
	return func(context.Context) ([]authwebhook.Attribute, error) {
		return []authwebhook.Attribute{{Key: key, Verb: verb}}, nil
	}
}

// documentByID names the document of project p with the given ID. The
// routing step has resolved its key already, so this is a lookup in the
// backend's memory.
func (s *Service) documentByID(p *database.ProjectInfo, docID string, verb authwebhook.Verb) attributes {
	return func(ctx context.Context) ([]authwebhook.Attribute, error) {
		key, err := s.backend.DocumentKey(ctx, p, docID)
		if err != nil {
			return nil, fmt.Errorf("authorize: %w", err)
		}
		return []authwebhook.Attribute{{Key: key, Verb: verb}}, nil
	}
}

// authorize asks the auth webhook of p, the call's project, about the call
// when the webhook guards its method (nil p: no project, no webhook). Each handler calls it once, after routing
// (a call refused there never reaches a webhook) and before serving or
// relaying. The answer for the client is a Connect error: denied is
// permission_denied (ErrPermissionDenied), a refused token unauthenticated
// (ErrUnauthenticated, the SDK asks authTokenInjector again and retries),
// and a webhook that fails fails the call closed (see authwebhook.ConnectError).
func (s *Service) authorize(ctx context.Context, p *database.ProjectInfo, procedure string, header http.Header, attrs attributes) error {
	if s.auth == nil || p == nil {
		return nil
	}
	if s.auth.Forwarded != nil && s.auth.Forwarded(header) {
		return nil
	}
	settings := authwebhook.Settings{URL: p.AuthWebhookURL, Methods: p.AuthWebhookMethods}
	method := methodOf(procedure)
	if !settings.Guards(method) {
		return nil
	}
	settings.Policy = s.auth.Policy(p)
	list, err := attrs(ctx)
	if err != nil {
		return errinfo.ToConnect(err)
	}
	err = s.auth.Client.Check(ctx, settings, authwebhook.Request{
		Project:    p.ID,
		Token:      header.Get(authorizationHeader),
		Method:     method,
		Attributes: list,
	})
	if err == nil {
		return nil
	}
	if cerr, ok := authwebhook.ConnectError(err); ok {
		return cerr
	}
	return errinfo.ToConnect(fmt.Errorf("authorize %s: %w", method, err))
}
