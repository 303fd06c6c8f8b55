package routing

import (
	"fmt"
	"net/http"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// CallKind names the kind of document call passing the routing step.
type CallKind int

// Document call kinds.
const (
	CallAttach CallKind = iota + 1
	CallDetach
	CallRemove
	CallPushPull
	CallWatch
	// CallAttachChannel, CallChannel (detach, refresh, broadcast) and
	// CallWatchChannel are channel calls: DocumentKey is the routing key of
	// the channel's group (channel.RoutingKey).
	CallAttachChannel
	CallChannel
	CallWatchChannel
	// CallAdmin is an AdminService call on a document (a compaction),
	// served by the owner and handed on to it even in redirect mode: its
	// callers follow no redirect.
	CallAdmin
	// CallRevision is a client's revision call on a document (create,
	// list, get, restore).
	CallRevision
)

// String returns the call kind's RPC-like name, for logs.
func (k CallKind) String() string {
	switch k {
	case CallAttach:
		return "attach"
	case CallDetach:
		return "detach"
	case CallRemove:
		return "remove"
	case CallPushPull:
		return "pushpull"
	case CallWatch:
		return "watch"
	case CallAttachChannel:
		return "attach-channel"
	case CallChannel:
		return "channel"
	case CallWatchChannel:
		return "watch-channel"
	case CallAdmin:
		return "admin"
	case CallRevision:
		return "revision"
	}
	return fmt.Sprintf("CallKind(%d)", int(k))
}

// DocumentCall describes one document call to the routing step.
type DocumentCall struct {
	Kind CallKind
	// Project is the project the call acts in, as the RPC layer resolved it
	// from the request's API key (or the admin layer from its call). Route
	// refuses a call without one (project.ErrMissing).
	Project  *database.ProjectInfo
	ClientID string
	// DocumentID is set on every call but AttachDocument.
	DocumentID string
	// DocumentKey is always set: from the attach pack, or looked up by ID.
	DocumentKey string
	// Header is the request's headers: a session key the client or a proxy
	// sent back, and the marks of a call another node forwarded.
	Header http.Header
}

// Route says where a document call is served: the call's project, its
// document's binding, the owner, and the owner epoch when served here.
type Route struct {
	// Project is the call's project, which the backend acts in when the
	// call is served here.
	Project *database.ProjectInfo
	// Binding is the session store key of the document's binding (its
	// project and key): what RelayFailed forgets.
	Binding string
	// SessionKey names the owner; responses carry it in the router's
	// session key header. Empty when the router names no owner.
	SessionKey string
	// Owner, when set, is the owner's service: this node relays the call
	// there. Nil serves the call here.
	Owner v1connect.YorkieServiceClient
	// Addr is the owner's address when this node relays the call there.
	Addr string
	// OwnerGone is closed when the owner leaves the cluster; a relay to it
	// then ends with unavailable instead of waiting on a node that froze.
	OwnerGone <-chan struct{}
	// Epoch is this node's owner epoch for the document when the call is
	// served here: the backend writes with it, so the database refuses the
	// writes of an owner that a newer one has replaced.
	Epoch int64
	// Held, for a channel call (CallAttachChannel, CallChannel,
	// CallWatchChannel) served here, reports whether this node still holds the binding at Epoch; nil
	// for other calls and routers that cannot tell (served as held). The
	// channel manager checks it under the lock a hand-off copies the
	// group's sessions under.
	Held func() bool
}

// IsAttach reports whether the call creates an attachment: such a call must
// succeed wherever it lands, so even redirect mode hands it to the owner.
func (k CallKind) IsAttach() bool { return k == CallAttach || k == CallAttachChannel }

// handedOn reports whether the call goes to the owner even in redirect mode.
func (k CallKind) handedOn() bool { return k.IsAttach() || k == CallAdmin }
