package admin

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// authMethods are the calls an auth webhook may guard, named as upstream
// names them in a project's settings.
var authMethods = []string{
	"ActivateClient", "DeactivateClient", "AttachDocument", "DetachDocument", "RemoveDocument",
	"PushPull", "Watch", "WatchDocument", "WatchChannel",
	"CreateRevision", "GetRevision", "ListRevisions", "RestoreRevision",
	"AttachChannel", "DetachChannel", "RefreshChannel", "PeekChannel", "Broadcast",
}

// eventTypes are the events an event webhook may receive.
var eventTypes = []string{"DocumentRootChanged"}

// Character classes a password must contain.
var (
	hasLetter  = regexp.MustCompile(`[a-zA-Z]`)
	hasDigit   = regexp.MustCompile(`[0-9]`)
	hasSpecial = regexp.MustCompile(`[^a-zA-Z0-9]`)
)

// slug is upstream's rule for user and project names.
var slug = regexp.MustCompile(`^[a-zA-Z0-9\-._~]+$`)

func validateName(what, name string) error {
	if n := len(name); n < 2 || n > 30 || !slug.MatchString(name) {
		return fmt.Errorf("%s %q: want 2 to 30 letters, digits or -._~", what, name)
	}
	return nil
}

func validateUsername(name string) error    { return validateName("username", name) }
func validateProjectName(name string) error { return validateName("project name", name) }

// validatePassword follows upstream's rule: 8 to 30 characters with a letter,
// a digit and a special character.
func validatePassword(pw string) error {
	if n := len(pw); n < 8 || n > 30 || !hasLetter.MatchString(pw) || !hasDigit.MatchString(pw) || !hasSpecial.MatchString(pw) {
		return errors.New("password: want 8 to 30 characters with a letter, a digit and a special character")
	}
	return nil
}

func validateWebhookURL(what, raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q: want an http or https URL, or empty", what, raw)
	}
	return nil
}

// validOriginPattern reports whether o is "*" or a plain origin
// (scheme://host[:port], no path) whose host labels may be patterns.
func validOriginPattern(o string) bool {
	if o == "*" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Scheme != "" && u.Host != "" && u.User == nil && u.Path == "" && u.RawQuery == "" && u.Fragment == ""
}

func validateAll(what string, got, known []string) error {
	for _, v := range got {
		if !slices.Contains(known, v) {
			return fmt.Errorf("%s: unknown %q (want one of %v)", what, v, known)
		}
	}
	return nil
}

// projectUpdate checks the fields a request sets and turns them into a
// database update: every field of the project this server keeps.
func projectUpdate(f *api.UpdatableProjectFields) (*database.ProjectUpdate, error) {
	if f == nil {
		return nil, invalidArgument(errors.New("no fields to update"))
	}
	u := &database.ProjectUpdate{}
	var errs []error
	if f.Name != nil {
		u.Name = &f.Name.Value
		errs = append(errs, validateProjectName(f.Name.Value))
	}
	if f.AuthWebhookUrl != nil {
		u.AuthWebhookURL = &f.AuthWebhookUrl.Value
		errs = append(errs, validateWebhookURL("auth webhook URL", f.AuthWebhookUrl.Value))
	}
	if f.AuthWebhookMethods != nil {
		m := slices.Clone(f.AuthWebhookMethods.Methods)
		u.AuthWebhookMethods = &m
		errs = append(errs, validateAll("auth webhook methods", m, authMethods))
	}
	errs = append(errs,
		webhookUpdate("auth webhook", &u.AuthWebhook, f.AuthWebhookMaxRetries,
			f.AuthWebhookMinWaitInterval, f.AuthWebhookMaxWaitInterval, f.AuthWebhookRequestTimeout),
		webhookUpdate("event webhook", &u.EventWebhook, f.EventWebhookMaxRetries,
			f.EventWebhookMinWaitInterval, f.EventWebhookMaxWaitInterval, f.EventWebhookRequestTimeout))
	if f.EventWebhookUrl != nil {
		u.EventWebhookURL = &f.EventWebhookUrl.Value
		errs = append(errs, validateWebhookURL("event webhook URL", f.EventWebhookUrl.Value))
	}
	if f.EventWebhookEvents != nil {
		e := slices.Clone(f.EventWebhookEvents.Events)
		u.EventWebhookEvents = &e
		errs = append(errs, validateAll("event webhook events", e, eventTypes))
	}
	if f.ClientDeactivateThreshold != nil {
		v := f.ClientDeactivateThreshold.Value
		u.ClientDeactivateThreshold = &v
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("client deactivate threshold %q: want a positive duration such as 24h", v))
		}
	}
	limit := func(name string, w interface{ GetValue() int32 }, dst **int) {
		v := int(w.GetValue())
		*dst = &v
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s %d: want 0 (no bound) or more", name, v))
		}
	}
	if f.MaxSubscribersPerDocument != nil {
		limit("max subscribers per document", f.MaxSubscribersPerDocument, &u.MaxSubscribersPerDocument)
	}
	if f.MaxAttachmentsPerDocument != nil {
		limit("max attachments per document", f.MaxAttachmentsPerDocument, &u.MaxAttachmentsPerDocument)
	}
	if f.MaxSizePerDocument != nil {
		limit("max size per document", f.MaxSizePerDocument, &u.MaxSizePerDocument)
	}
	if f.RemoveOnDetach != nil {
		u.RemoveOnDetach = &f.RemoveOnDetach.Value
	}
	if f.AutoRevisionEnabled != nil {
		u.AutoRevisionEnabled = &f.AutoRevisionEnabled.Value
	}
	for _, n := range []struct {
		name string
		w    *wrapperspb.Int64Value
		dst  **int64
	}{
		{"snapshot threshold", f.SnapshotThreshold, &u.SnapshotThreshold},
		{"snapshot interval", f.SnapshotInterval, &u.SnapshotInterval},
	} {
		if n.w == nil {
			continue
		}
		v := n.w.Value
		*n.dst = &v
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s %d: want 0 (the server's flag) or more", n.name, v))
		}
	}
	if f.ChannelSessionTtl != nil {
		v := f.ChannelSessionTtl.Value
		u.ChannelSessionTTL = &v
		if d, err := time.ParseDuration(v); v != "" && (err != nil || d <= 0) {
			errs = append(errs, fmt.Errorf("channel session ttl %q: want a positive duration such as 60s, or empty", v))
		}
	}
	if f.AllowedOrigins != nil {
		var origins []string
		for _, o := range f.AllowedOrigins.Origins {
			if o = strings.TrimRight(strings.TrimSpace(o), "/"); o == "" {
				continue
			}
			origins = append(origins, o)
			if !validOriginPattern(o) {
				errs = append(errs, fmt.Errorf("allowed origin %q: want * or scheme://host[:port], the host's labels may be *", o))
			}
		}
		u.AllowedOrigins = &origins
	}
	if err := errors.Join(errs...); err != nil {
		return nil, invalidArgument(err)
	}
	return u, nil
}

// webhookUpdate turns a webhook's call settings into dst. A duration must be
// a positive Go duration, or empty for the server's flag; the minimum wait
// must not exceed the maximum when the request sets both.
func webhookUpdate(what string, dst *database.WebhookUpdate, retries *wrapperspb.UInt64Value,
	minWait, maxWait, timeout *wrapperspb.StringValue,
) error {
	var errs []error
	if retries != nil {
		dst.MaxRetries = &retries.Value
	}
	durations := map[string]time.Duration{}
	for _, d := range []struct {
		name string
		w    *wrapperspb.StringValue
		dst  **string
	}{
		{"min wait interval", minWait, &dst.MinWaitInterval},
		{"max wait interval", maxWait, &dst.MaxWaitInterval},
		{"request timeout", timeout, &dst.RequestTimeout},
	} {
		if d.w == nil {
			continue
		}
		v := d.w.Value
		*d.dst = &v
		if v == "" {
			continue
		}
		parsed, err := time.ParseDuration(v)
		if err != nil || parsed <= 0 {
			errs = append(errs, fmt.Errorf("%s %s %q: want a positive duration such as 3s, or empty", what, d.name, v))
			continue
		}
		durations[d.name] = parsed
	}
	lo, okLo := durations["min wait interval"]
	hi, okHi := durations["max wait interval"]
	if okLo && okHi && lo > hi {
		errs = append(errs, fmt.Errorf("%s min wait interval %v is above its max wait interval %v", what, lo, hi))
	}
	return errors.Join(errs...)
}

func toUser(u *database.UserInfo) *api.User {
	return &api.User{Id: u.ID, Username: u.Username, CreatedAt: timestamppb.New(u.CreatedAt)}
}

func toProject(p *database.ProjectInfo) *api.Project {
	return &api.Project{
		Id: p.ID, Name: p.Name, PublicKey: p.PublicKey, SecretKey: p.SecretKey,
		AuthWebhookUrl: p.AuthWebhookURL, AuthWebhookMethods: p.AuthWebhookMethods,
		AuthWebhookMaxRetries:      p.AuthWebhook.MaxRetries,
		AuthWebhookMinWaitInterval: p.AuthWebhook.MinWaitInterval,
		AuthWebhookMaxWaitInterval: p.AuthWebhook.MaxWaitInterval,
		AuthWebhookRequestTimeout:  p.AuthWebhook.RequestTimeout,
		EventWebhookUrl:            p.EventWebhookURL, EventWebhookEvents: p.EventWebhookEvents,
		EventWebhookMaxRetries:      p.EventWebhook.MaxRetries,
		EventWebhookMinWaitInterval: p.EventWebhook.MinWaitInterval,
		EventWebhookMaxWaitInterval: p.EventWebhook.MaxWaitInterval,
		EventWebhookRequestTimeout:  p.EventWebhook.RequestTimeout,
		ClientDeactivateThreshold:   p.ClientDeactivateThreshold,
		MaxSubscribersPerDocument:   int32(p.MaxSubscribersPerDocument),
		MaxAttachmentsPerDocument:   int32(p.MaxAttachmentsPerDocument),
		MaxSizePerDocument:          int32(p.MaxSizePerDocument),
		RemoveOnDetach:              p.RemoveOnDetach,
		AutoRevisionEnabled:         p.AutoRevisionEnabled,
		SnapshotThreshold:           p.SnapshotThreshold,
		SnapshotInterval:            p.SnapshotInterval,
		ChannelSessionTtl:           p.ChannelSessionTTL,
		AllowedOrigins:              p.AllowedOrigins,
		CreatedAt:                   timestamppb.New(p.CreatedAt),
		UpdatedAt:                   timestamppb.New(p.UpdatedAt),
	}
}
