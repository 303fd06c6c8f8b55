package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// ErrAddressRefused is returned for a webhook whose address is in a range the
// client was told to refuse. It is never retried.
var ErrAddressRefused = errors.New("webhook address refused")

// HTTPClientConfig configures NewHTTPClient.
type HTTPClientConfig struct {
	// RefusePrivate refuses connections to loopback, private, link-local,
	// shared (CGNAT), unspecified and multicast addresses, so a project's
	// webhook URL cannot reach the server's own network. The check runs on
	// the address actually dialled, after DNS resolution, so a name that
	// resolves to a public address when saved and to a private one later
	// (DNS rebinding) is still refused.
	RefusePrivate bool
	// DialTimeout bounds connecting (5s when zero); the webhooks' own request
	// timeouts bound the rest.
	DialTimeout time.Duration
	// MaxIdleConnsPerHost keeps connections to busy webhooks open (16 when zero).
	MaxIdleConnsPerHost int
}

// NewHTTPClient returns the client the webhooks post with. It ignores proxy
// settings from the environment: a proxy would be the address dialled, and
// the private-address check would look at the proxy instead of the webhook.
func NewHTTPClient(cfg HTTPClientConfig) *http.Client {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.MaxIdleConnsPerHost <= 0 {
		cfg.MaxIdleConnsPerHost = 16
	}
	dialer := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	if cfg.RefusePrivate {
		dialer.Control = refusePrivate
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         dialer.DialContext,
			ForceAttemptHTTP2:   true,
			MaxIdleConns:        256,
			MaxIdleConnsPerHost: cfg.MaxIdleConnsPerHost,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 5 * time.Second,
		},
		// A redirect would be followed without the dial check's knowledge of
		// why; webhooks answer directly or not at all.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// refusePrivate runs after DNS resolution, once per address tried.
func refusePrivate(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparsable address %q", ErrAddressRefused, address)
	}
	if IsPrivate(ap.Addr()) {
		return fmt.Errorf("%w: %s is not a public address", ErrAddressRefused, ap.Addr())
	}
	return nil
}

// sharedRange is RFC 6598's carrier-grade NAT range, private in practice but
// not in netip's IsPrivate.
var sharedRange = netip.MustParsePrefix("100.64.0.0/10")

// thisNetwork is 0.0.0.0/8, which Linux routes to the local host.
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// IsPrivate reports whether a refusing client refuses addr. IPv4 addresses
// mapped into IPv6 are judged as the IPv4 address they carry.
func IsPrivate(addr netip.Addr) bool {
	addr = addr.Unmap()
	return !addr.IsValid() ||
		addr.IsUnspecified() ||
		addr.IsLoopback() ||
		addr.IsPrivate() ||
		addr.IsLinkLocalUnicast() ||
		addr.IsLinkLocalMulticast() ||
		addr.IsInterfaceLocalMulticast() ||
		addr.IsMulticast() ||
		sharedRange.Contains(addr) ||
		thisNetwork.Contains(addr)
}
