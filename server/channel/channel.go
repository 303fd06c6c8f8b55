// Package channel keeps the sessions of Yorkie channels in memory: presence
// counts that include sub-channels, sessions that expire unless refreshed,
// and broadcasts relayed to a channel's other watchers. Nothing is stored; a
// node that loses a channel loses its sessions, and clients bring them back
// with their next heartbeat.
package channel

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/fifo"
	"github.com/yorkie-affinity/yorkie/server/project"
)

// Defaults of Config fields left zero.
const (
	// DefaultSessionTTL is upstream Yorkie's: twice the SDK's 30 s heartbeat.
	DefaultSessionTTL = 60 * time.Second
	// DefaultMaxPayloadBytes bounds one broadcast: its payload and topic
	// together.
	DefaultMaxPayloadBytes = 64 << 10
	// MaxTopicBytes bounds a broadcast's topic: topics name kinds of
	// messages, and every queued broadcast keeps one.
	MaxTopicBytes = 1024
	// DefaultWatcherBuffer is how many broadcasts a watcher may lag behind
	// before its stream is ended.
	DefaultWatcherBuffer = 256
	// maxSweepInterval keeps expiry within a few seconds of the TTL even
	// with a long one.
	maxSweepInterval = 5 * time.Second
	// detachedMemory is how long a detached session's ID is remembered
	// (see Manager.detached): well beyond the moment between a hand-off's
	// move of the binding and its copy of the sessions arriving here.
	detachedMemory = time.Minute
	// maxDetached bounds the IDs remembered: the oldest are forgotten
	// first, and only the newest matter.
	maxDetached = 1 << 14
)

// Separator splits a channel key into its key paths.
const Separator = "."

var (
	// ErrInvalidKey: a channel key the SDK itself would refuse.
	ErrInvalidKey = errors.New("invalid channel key")
	// ErrPayloadTooLarge: a broadcast whose payload and topic together are
	// over Config.MaxPayloadBytes, or whose topic is over MaxTopicBytes.
	ErrPayloadTooLarge = errors.New("broadcast payload too large")
	// ErrInvalidSession: a session ID this package could not have issued.
	ErrInvalidSession = errors.New("invalid channel session ID")
	// ErrSessionNotFound: no live session has the ID on that channel for that client.
	ErrSessionNotFound = errors.New("channel session not found")
	// ErrSlowWatcher ends a watcher that fell a whole buffer of broadcasts
	// behind; its client reconnects and goes on from there.
	ErrSlowWatcher = fault.NewRetryable("channel watcher fell too far behind")
	// ErrReleased ends the watchers of channels this node gave up; their
	// clients reconnect to the new owner.
	ErrReleased = fault.NewRetryable("channel released by this node")
	// ErrMoved refuses a change to a channel whose group this node no
	// longer holds (the held check of Attach, Detach and Refresh): the
	// caller routes the call again, to the group's new owner.
	ErrMoved = fault.NewRetryable("channel group moved to another node")
)

// errClosed answers every call on a closed manager.
var errClosed = fmt.Errorf("channel manager closed: %w", fault.ErrShuttingDown)

// maxKeyLength bounds a channel key, as document keys are bounded.
const maxKeyLength = 120

// ValidateKey checks a channel key as the SDK builds them: non-empty key
// paths of letters, digits and "-_~" joined by ".", at most 120 bytes.
func ValidateKey(key string) error {
	if key == "" || len(key) > maxKeyLength {
		return fmt.Errorf("channel key %q: want 1 to %d characters: %w", short(key), maxKeyLength, ErrInvalidKey)
	}
	for _, path := range strings.Split(key, Separator) {
		if path == "" {
			return fmt.Errorf("channel key %q has an empty key path: %w", short(key), ErrInvalidKey)
		}
		for i := 0; i < len(path); i++ {
			c := path[i]
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
			case c == '-', c == '_', c == '~':
			default:
				return fmt.Errorf("channel key %q: want letters, digits and \"-_~\" between dots: %w", short(key), ErrInvalidKey)
			}
		}
	}
	return nil
}

// FirstKeyPath returns the key path before the first separator: the channels
// sharing it are counted together, so one node owns them all.
func FirstKeyPath(key string) string {
	first, _, _ := strings.Cut(key, Separator)
	return first
}

func short(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// Config configures a Manager.
type Config struct {
	// SessionTTL is how long a session lives after its attach or last
	// refresh (0: DefaultSessionTTL).
	SessionTTL time.Duration
	// SweepInterval is how often expired sessions are removed (0: a quarter
	// of the TTL, at most 5 s).
	SweepInterval time.Duration
	// MaxPayloadBytes bounds a broadcast payload (0: DefaultMaxPayloadBytes).
	MaxPayloadBytes int
	// WatcherBuffer is the broadcasts a watcher may lag (0: DefaultWatcherBuffer).
	WatcherBuffer int
	// Logger receives expiries at debug level; nil discards.
	Logger *slog.Logger
	// Metrics, when set, is updated with sessions and broadcasts.
	Metrics *Metrics
}

// Manager holds every channel this node serves.
type Manager struct {
	ttl        time.Duration
	sweepEvery time.Duration
	maxPayload int
	buffer     int
	logger     *slog.Logger
	metrics    *Metrics

	mu       sync.Mutex
	nodes    map[string]*node    // channel key -> node, while anything lives at or below it
	sessions map[string]*session // session ID -> session
	byClient map[clientChannel]*session
	lastSeq  int64
	closed   bool
	// detached holds the IDs of sessions detached here in the last
	// detachedMemory, known or not, oldest first in detachedOrder. A
	// draining owner may copy a session to this node just before its
	// client's detach, relayed or sent here directly, reaches this node
	// ahead of the copy; Import skips such a session instead of counting
	// it again until its TTL.
	detached      map[string]time.Time
	detachedOrder fifo.Queue[detachedID]

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// clientChannel names a client's session on one channel: a client holds at
// most one session per channel, as upstream does.
type clientChannel struct{ client, key string }

// node is one channel key in the tree of keys.
type node struct {
	key      string
	own      int // sessions on exactly this key
	total    int // sessions on this key and every key below it
	watchers map[*Watcher]struct{}
}

type detachedID struct {
	id string
	at time.Time
}

type session struct {
	id        string
	key       string
	client    string
	refreshed time.Time
	// ttl is the session's time to live, its project's when the project
	// sets one, else the manager's.
	ttl time.Duration
}

// New returns a Manager and starts its sweeper; Close stops it.
func New(cfg Config) *Manager {
	ttl := cfg.SessionTTL
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	sweep := cfg.SweepInterval
	if sweep <= 0 {
		sweep = min(ttl/4, maxSweepInterval)
	}
	maxPayload := cfg.MaxPayloadBytes
	if maxPayload <= 0 {
		maxPayload = DefaultMaxPayloadBytes
	}
	buffer := cfg.WatcherBuffer
	if buffer <= 0 {
		buffer = DefaultWatcherBuffer
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{
		ttl:        ttl,
		sweepEvery: sweep,
		maxPayload: maxPayload,
		buffer:     buffer,
		logger:     logger,
		metrics:    cfg.Metrics,
		nodes:      map[string]*node{},
		sessions:   map[string]*session{},
		byClient:   map[clientChannel]*session{},
		detached:   map[string]time.Time{},
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	go m.sweepLoop()
	return m
}

// SessionTTL returns the sessions' time to live when their project sets
// none.
func (m *Manager) SessionTTL() time.Duration { return m.ttl }

// ttlOr returns ttl, or the manager's when ttl is not positive.
func (m *Manager) ttlOr(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return m.ttl
	}
	return ttl
}

// MaxPayloadBytes returns the bound on a broadcast payload.
func (m *Manager) MaxPayloadBytes() int { return m.maxPayload }

// Close stops the sweeper and ends every watcher with fault.ErrShuttingDown.
func (m *Manager) Close() {
	m.stopOnce.Do(func() { close(m.stop) })
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for _, n := range m.nodes {
		for w := range n.watchers {
			w.end(errClosed)
		}
		m.metrics.watchers(-len(n.watchers))
	}
	m.nodes = map[string]*node{}
	m.sessions = map[string]*session{}
	m.byClient = map[clientChannel]*session{}
	m.metrics.setSessions(0)
}

// Held reports whether this node still holds the group of the channel a
// call changes. Attach, Detach and Refresh check it under the manager's
// lock and refuse with ErrMoved when it fails: a draining node copies a
// group's sessions under the same lock after the binding moved, so each
// change either is in the copy or is refused here and made at the new
// owner, never made here after the copy (see server.handOff). Nil is held.
type Held func() bool

// moved checks held; the caller holds m.mu.
func moved(held Held, key string) error {
	if held == nil || held() {
		return nil
	}
	return fmt.Errorf("channel %q: %w", short(key), ErrMoved)
}

// Attach gives the client a session on the channel, or returns the one it
// holds already, with the channel's count. The session lives ttl after
// this and after each Refresh (0: the manager's SessionTTL), so a project's
// channel_session_ttl applies to its sessions.
func (m *Manager) Attach(clientID, key string, ttl time.Duration, held Held) (sessionID string, count int64, err error) {
	if err := validateScoped(key); err != nil {
		return "", 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", 0, errClosed
	}
	if err := moved(held, key); err != nil {
		return "", 0, err
	}
	if s, ok := m.byClient[clientChannel{clientID, key}]; ok {
		s.refreshed, s.ttl = time.Now(), m.ttlOr(ttl)
		return s.id, int64(m.nodes[key].total), nil
	}
	id, err := newSessionID()
	if err != nil {
		return "", 0, err
	}
	m.addLocked(&session{id: id, key: key, client: clientID, refreshed: time.Now(), ttl: m.ttlOr(ttl)})
	return id, int64(m.nodes[key].total), nil
}

// validateSession checks the scoped key and session ID a Detach or Refresh
// names.
func validateSession(key, sessionID string) error {
	if err := validateScoped(key); err != nil {
		return err
	}
	return validateSessionID(sessionID)
}

// Detach ends the client's session on the channel and returns the count
// after it. An unknown session is not an error: it may have expired or been
// lost with another node, and the client wants it gone either way.
func (m *Manager) Detach(clientID, key, sessionID string, held Held) (int64, error) {
	if err := validateSession(key, sessionID); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := moved(held, key); err != nil {
		return 0, err
	}
	s, ok := m.sessions[sessionID]
	switch {
	case !ok:
		m.rememberDetachedLocked(sessionID, time.Now())
	case s.key == key && s.client == clientID:
		// Remembered too: it may have been brought back by a heartbeat
		// that came here ahead of the copy of it.
		m.removeLocked(s)
		m.rememberDetachedLocked(sessionID, time.Now())
	}
	return m.countLocked(key), nil
}

// rememberDetachedLocked records that sessionID was detached at now and
// forgets the IDs that are too old or too many.
func (m *Manager) rememberDetachedLocked(sessionID string, now time.Time) {
	m.detached[sessionID] = now
	m.detachedOrder.Push(detachedID{sessionID, now})
	m.forgetDetachedLocked(now)
}

// forgetDetachedLocked drops the remembered detaches older than
// detachedMemory before now, and the oldest beyond maxDetached.
func (m *Manager) forgetDetachedLocked(now time.Time) {
	for {
		d, ok := m.detachedOrder.Peek()
		if !ok || (m.detachedOrder.Len() <= maxDetached && now.Sub(d.at) <= detachedMemory) {
			return
		}
		m.detachedOrder.Pop()
		if m.detached[d.id] == d.at {
			delete(m.detached, d.id)
		}
	}
}

// Refresh extends the session's life by ttl (0: the manager's SessionTTL)
// and returns the channel's count. A session this node does not know (it
// expired, or it lived on a node that died) is created again under the
// same ID, so a heartbeat is all a client needs to be counted again.
func (m *Manager) Refresh(clientID, key, sessionID string, ttl time.Duration, held Held) (int64, error) {
	if err := validateSession(key, sessionID); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, errClosed
	}
	if err := moved(held, key); err != nil {
		return 0, err
	}
	if s, ok := m.sessions[sessionID]; ok {
		if s.key != key || s.client != clientID {
			return 0, fmt.Errorf("session %s is not %s's on %q: %w", sessionID, clientID, key, ErrSessionNotFound)
		}
		s.refreshed, s.ttl = time.Now(), m.ttlOr(ttl)
		return int64(m.nodes[key].total), nil
	}
	if old, ok := m.byClient[clientChannel{clientID, key}]; ok {
		// The client attached again here and then sent a heartbeat of its
		// older session: keep one session per client and channel.
		m.removeLocked(old)
	}
	m.addLocked(&session{id: sessionID, key: key, client: clientID, refreshed: time.Now(), ttl: m.ttlOr(ttl)})
	return int64(m.nodes[key].total), nil
}

// Count returns the sessions on the channel and its sub-channels.
func (m *Manager) Count(key string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.countLocked(key)
}

func (m *Manager) countLocked(key string) int64 {
	if n, ok := m.nodes[key]; ok {
		return int64(n.total)
	}
	return 0
}

// DetachClient ends every session of the client on this node: a
// deactivating SDK sends no DetachChannel.
func (m *Manager) DetachClient(clientID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for cc, s := range m.byClient {
		if cc.client == clientID {
			m.removeLocked(s)
		}
	}
}

// Release drops every channel whose first key path is firstKeyPath: this
// node no longer owns them. Their watchers end with cause (wrapped in
// ErrReleased, which clients retry), so clients
// reconnect to the new owner, where their heartbeats count them again.
func (m *Manager) Release(firstKeyPath string, cause error) {
	switch {
	case cause == nil:
		cause = ErrReleased
	case !errors.Is(cause, ErrReleased):
		cause = fmt.Errorf("%w: %w", ErrReleased, cause)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, s := range m.sessions {
		if FirstKeyPath(s.key) == firstKeyPath {
			delete(m.sessions, id)
			delete(m.byClient, clientChannel{s.client, s.key})
		}
	}
	for key, n := range m.nodes {
		if FirstKeyPath(key) != firstKeyPath {
			continue
		}
		for w := range n.watchers {
			w.end(cause)
		}
		m.metrics.watchers(-len(n.watchers))
		delete(m.nodes, key)
	}
	m.metrics.setSessions(len(m.sessions))
}

// Broadcast hands topic and payload to the channel's watchers, except those
// of the sender.
func (m *Manager) Broadcast(senderID, key, topic string, payload []byte) error {
	if err := validateScoped(key); err != nil {
		return err
	}
	if err := CheckBroadcastSize(topic, payload, m.maxPayload); err != nil {
		return err
	}
	msg := Message{Publisher: senderID, Topic: topic, Payload: payload}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[key]
	if !ok {
		return nil
	}
	delivered := 0
	for w := range n.watchers {
		if w.client == senderID {
			continue
		}
		if w.deliver(msg) {
			delivered++
		} else {
			m.dropWatcherLocked(w, ErrSlowWatcher)
		}
	}
	m.metrics.broadcast(delivered)
	return nil
}

// CheckBroadcastSize refuses a broadcast whose topic is over MaxTopicBytes
// or whose topic and payload together are over maxBytes: the topic is
// queued and fanned out like the payload, so it counts against the same
// bound.
func CheckBroadcastSize(topic string, payload []byte, maxBytes int) error {
	if len(topic) > MaxTopicBytes {
		return fmt.Errorf("topic of %d bytes, at most %d: %w", len(topic), MaxTopicBytes, ErrPayloadTooLarge)
	}
	if n := len(topic) + len(payload); n > maxBytes {
		return fmt.Errorf("topic and payload of %d bytes, at most %d: %w", n, maxBytes, ErrPayloadTooLarge)
	}
	return nil
}

// Watch subscribes the client to the channel: count changes of the channel
// and its sub-channels, and the broadcasts on it. The returned count is the
// current one, at seq. Held is checked as by Attach: a watcher added after
// the group's release here would wait on a count that no longer changes.
func (m *Manager) Watch(clientID, key string, held Held) (*Watcher, error) {
	if err := validateScoped(key); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errClosed
	}
	if err := moved(held, key); err != nil {
		return nil, err
	}
	n := m.nodeLocked(key)
	w := &Watcher{
		m:      m,
		client: clientID,
		key:    key,
		limit:  m.buffer,
		ready:  make(chan struct{}, 1),
		done:   make(chan struct{}),
		count:  Count{Sessions: int64(n.total), Seq: m.lastSeq},
	}
	if n.watchers == nil {
		n.watchers = map[*Watcher]struct{}{}
	}
	n.watchers[w] = struct{}{}
	m.metrics.watchers(1)
	return w, nil
}

// nodeLocked returns the node of key, creating it.
func (m *Manager) nodeLocked(key string) *node {
	n, ok := m.nodes[key]
	if !ok {
		n = &node{key: key}
		m.nodes[key] = n
	}
	return n
}

// addLocked records s and tells the watchers of its channel and of every
// parent channel their new counts.
func (m *Manager) addLocked(s *session) {
	m.sessions[s.id] = s
	m.byClient[clientChannel{s.client, s.key}] = s
	m.nodeLocked(s.key).own++
	m.adjustLocked(s.key, 1)
	m.metrics.setSessions(len(m.sessions))
}

func (m *Manager) removeLocked(s *session) {
	delete(m.sessions, s.id)
	delete(m.byClient, clientChannel{s.client, s.key})
	if n, ok := m.nodes[s.key]; ok {
		n.own--
	}
	m.adjustLocked(s.key, -1)
	m.metrics.setSessions(len(m.sessions))
}

// adjustLocked adds delta to the totals of key and its ancestors and
// notifies their watchers, all under one new sequence number.
func (m *Manager) adjustLocked(key string, delta int) {
	seq := m.nextSeqLocked()
	for k := key; ; {
		n := m.nodeLocked(k)
		n.total += delta
		c := Count{Sessions: int64(n.total), Seq: seq}
		for w := range n.watchers {
			w.setCount(c)
		}
		m.pruneLocked(n)
		i := strings.LastIndex(k, Separator)
		if i < 0 {
			return
		}
		k = k[:i]
	}
}

// nextSeqLocked returns a sequence number above every earlier one. It
// starts from the clock so that a node taking over a channel after its
// owner died issues numbers above the old owner's, which clients would
// otherwise drop as stale.
func (m *Manager) nextSeqLocked() int64 {
	seq := time.Now().UnixMicro()
	if seq <= m.lastSeq {
		seq = m.lastSeq + 1
	}
	m.lastSeq = seq
	return seq
}

func (m *Manager) pruneLocked(n *node) {
	if n.total == 0 && len(n.watchers) == 0 {
		delete(m.nodes, n.key)
	}
}

func (m *Manager) dropWatcherLocked(w *Watcher, cause error) {
	n, ok := m.nodes[w.key]
	if !ok {
		return
	}
	if _, ok := n.watchers[w]; !ok {
		return
	}
	delete(n.watchers, w)
	m.metrics.watchers(-1)
	w.end(cause)
	m.pruneLocked(n)
}

func (m *Manager) sweepLoop() {
	defer close(m.done)
	t := time.NewTicker(m.sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case now := <-t.C:
			m.Sweep(now)
		}
	}
}

// Sweep removes the sessions not refreshed within their TTL before now
// and returns how many. The sweeper calls it; tests may too.
func (m *Manager) Sweep(now time.Time) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	expired := 0
	for _, s := range m.sessions {
		if now.Sub(s.refreshed) > s.ttl {
			m.removeLocked(s)
			expired++
		}
	}
	m.forgetDetachedLocked(now)
	if expired > 0 {
		m.metrics.expired(expired)
		m.logger.Debug("channel sessions expired", "sessions", expired)
	}
	return expired
}

func newSessionID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("new channel session ID: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// validateSessionID accepts what newSessionID makes: 24 lowercase hex
// digits, like upstream's IDs.
func validateSessionID(id string) error {
	if len(id) != 24 {
		return fmt.Errorf("session ID %q: want 24 hex digits: %w", short(id), ErrInvalidSession)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("session ID %q: want 24 hex digits: %w", short(id), ErrInvalidSession)
		}
	}
	return nil
}

// validateScoped checks a key the manager is given: a channel key, scoped
// to its project by project.ScopedKey so that projects never share a
// channel. FirstKeyPath of a scoped key is scoped too.
func validateScoped(key string) error {
	_, k := project.SplitScopedKey(key)
	return ValidateKey(k)
}

// routingPrefix marks the routing keys of channel groups. Document keys
// cannot contain '$', so a group never shares a binding with a document.
const routingPrefix = "$channel:"

// RoutingKey is the key under which the owner of every channel sharing the
// key's first key path is bound, alongside document keys.
func RoutingKey(key string) string { return routingPrefix + FirstKeyPath(key) }

// FromRoutingKey returns the first key path a routing key stands for, and
// false for a document key.
func FromRoutingKey(routingKey string) (string, bool) {
	return strings.CutPrefix(routingKey, routingPrefix)
}
