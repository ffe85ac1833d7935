package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/ploti-replica/ploti-replica/logs"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultBaseURL             = "https://api.ploti.ai"
	DefaultUserAgent           = "ploti-replica"
	DefaultMaxAttempts         = 6
	DefaultPlanUnavailableWait = time.Minute
	DefaultRetryMinWait        = 500 * time.Millisecond
	DefaultRetryMaxWait        = 30 * time.Second
	DefaultReadIdleTimeout     = 2 * time.Minute
	DefaultAPIIdleTimeout      = 30 * time.Second
	DefaultAPITotalTimeout     = 2 * time.Minute
	DefaultRetryAfterBudget    = 5 * time.Minute
	DefaultLongWait            = 5 * time.Second
	DefaultCallsPerMinute      = 120 // ploti-docs: 120 calls a minute per key
	DefaultHeavyCallsPerMinute = 20  // manifest, subscription create/change/preview
)

// Body limits: a success body larger than MaxBodyBytes is refused as
// malformed; an error body is read up to MaxErrorBodyBytes.
const (
	MaxBodyBytes      = 64 << 20
	MaxErrorBodyBytes = 64 << 10
)

// maxRetryAfter caps a server's Retry-After so a bogus header cannot park a
// sync for days; the context can always stop a wait sooner.
const maxRetryAfter = time.Hour

// Log keys.
const (
	logOp      = "op"
	logAttempt = "attempt"
	logWait    = "wait_ms" // an integer count of milliseconds
	logURL     = "url"
	logBytes   = "bytes"
)

// Options configure a Client. Zero fields take the Default… values.
type Options struct {
	// BaseURL is the API base, DefaultBaseURL when empty; the emulator's
	// http://127.0.0.1:port in tests. It may carry a path prefix.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer" only to BaseURL's scheme,
	// host and port. Required.
	APIKey string
	// HTTPClient is used as a template: the Client copies it and sets its
	// own CheckRedirect and, for API calls, the rate-limiting transport.
	// Nil means a client with dial, TLS, response-header and idle timeouts
	// but no overall timeout (which would kill a long download).
	HTTPClient *http.Client
	// SpoolDir is where Download writes files; Download fails without it.
	SpoolDir string
	// Logger receives retries and downloads; nil: no logs.
	Logger *slog.Logger
	// UserAgent is sent on every request; DefaultUserAgent when empty.
	UserAgent string
	// MaxAttempts bounds the tries of one call or download, the first
	// included; DefaultMaxAttempts when zero.
	MaxAttempts int
	// PlanUnavailableWait is the wait after a 503 plan_unavailable without
	// Retry-After; DefaultPlanUnavailableWait when zero.
	PlanUnavailableWait time.Duration
	// RetryMinWait and RetryMaxWait bound the jittered exponential backoff
	// between tries of a transient failure without Retry-After.
	RetryMinWait, RetryMaxWait time.Duration
	// ReadIdleTimeout aborts (and retries) a download that receives no
	// bytes for this long; DefaultReadIdleTimeout when zero.
	ReadIdleTimeout time.Duration
	// APIIdleTimeout ends a try of an API call that received no byte of
	// its answer for this long, the wait for the headers included;
	// APITotalTimeout one whose whole answer took longer. Both are retried
	// as transient failures (ErrIdleTimeout, ErrTotalTimeout); defaults
	// DefaultAPIIdleTimeout and DefaultAPITotalTimeout, which with the
	// default attempts give up on a stalled server within about 200 s.
	APIIdleTimeout, APITotalTimeout time.Duration
	// RetryAfterBudget is how long, summed, the calls made with one
	// context (WithWaitBudget; one call's tries without it) wait on
	// Retry-After answers; a Retry-After past what is left ends the call
	// at once with an error wrapping ErrRateLimited that says when Ploti
	// asked to come back. DefaultRetryAfterBudget when zero.
	RetryAfterBudget time.Duration
	// LongWait is the wait between tries (Retry-After or backoff) from
	// which a context's WithLongWait hook is called; DefaultLongWait when
	// zero.
	LongWait time.Duration
	// Sleep waits d or until ctx is done (then returns ctx's error). Tests
	// inject one that records waits and returns at once. It serves both
	// the retry backoff and the rate limiter.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for Retry-After dates and the rate limiter.
	Now func() time.Time
	// DisableRateLimit turns the client-side rate limiter off.
	DisableRateLimit bool
	// CallsPerMinute and HeavyCallsPerMinute are the limiter's rates:
	// every API call, and manifest plus subscription create/change/preview
	// calls. Defaults DefaultCallsPerMinute and DefaultHeavyCallsPerMinute.
	CallsPerMinute, HeavyCallsPerMinute int
}

// Client calls the Ploti Data Feeds API and downloads signed files. It is
// safe for concurrent use.
type Client struct {
	base        *url.URL // scheme://host[:port][/prefix], no trailing slash
	key         string
	api         *http.Client // rate limited, for API calls (with the key)
	files       *http.Client // for signed file links (never the key)
	spool       string
	log         *slog.Logger
	ua          string
	maxAttempts int
	planWait    time.Duration
	minWait     time.Duration
	maxWait     time.Duration
	idle        time.Duration
	apiIdle     time.Duration
	apiTotal    time.Duration
	raBudget    time.Duration
	longWait    time.Duration
	sleep       func(ctx context.Context, d time.Duration) error
	now         func() time.Time
	limiter     *limiter // nil when disabled
}

// New validates opts and returns a Client. BaseURL must parse with an
// http or https scheme and a host; APIKey must be non-empty.
func New(opts Options) (*Client, error) {
	raw := opts.BaseURL
	if raw == "" {
		raw = DefaultBaseURL
	}
	base, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("new client: parse base url: %w", err)
	}
	if base.Scheme != "http" && base.Scheme != "https" {
		return nil, fmt.Errorf("new client: base url scheme %q is not http or https", base.Scheme)
	}
	if base.Host == "" || base.Hostname() == "" {
		return nil, errors.New("new client: base url has no host")
	}
	if base.User != nil || base.RawQuery != "" || base.Fragment != "" {
		return nil, errors.New("new client: base url must not carry user info, query or fragment")
	}
	if err := checkKey(opts.APIKey); err != nil {
		return nil, fmt.Errorf("new client: %w", err)
	}
	base.Path = strings.TrimRight(base.Path, "/")
	base.RawPath = ""
	c := &Client{
		base:        base,
		key:         opts.APIKey,
		spool:       opts.SpoolDir,
		log:         logs.OrDiscard(opts.Logger),
		ua:          orDefault(opts.UserAgent, DefaultUserAgent),
		maxAttempts: orDefault(opts.MaxAttempts, DefaultMaxAttempts),
		planWait:    orDefault(opts.PlanUnavailableWait, DefaultPlanUnavailableWait),
		minWait:     orDefault(opts.RetryMinWait, DefaultRetryMinWait),
		maxWait:     orDefault(opts.RetryMaxWait, DefaultRetryMaxWait),
		idle:        orDefault(opts.ReadIdleTimeout, DefaultReadIdleTimeout),
		apiIdle:     orDefault(opts.APIIdleTimeout, DefaultAPIIdleTimeout),
		apiTotal:    orDefault(opts.APITotalTimeout, DefaultAPITotalTimeout),
		raBudget:    orDefault(opts.RetryAfterBudget, DefaultRetryAfterBudget),
		longWait:    orDefault(opts.LongWait, DefaultLongWait),
		sleep:       opts.Sleep,
		now:         opts.Now,
	}
	if c.sleep == nil {
		c.sleep = sleepCtx
	}
	if c.now == nil {
		c.now = time.Now
	}
	if !opts.DisableRateLimit {
		c.limiter = newLimiter(
			orDefault(opts.CallsPerMinute, DefaultCallsPerMinute),
			orDefault(opts.HeavyCallsPerMinute, DefaultHeavyCallsPerMinute),
			c.now, c.sleep)
	}
	c.api, c.files = c.httpClients(opts.HTTPClient)
	return c, nil
}

// BaseURL returns the API base URL the client calls (and sends its key to).
func (c *Client) BaseURL() string { return c.base.String() }

// CallsPerMinute is the rate the client's limiter lets API calls go at,
// and how many it lets go at once before it waits (its burst); zero when
// the limiter is off.
func (c *Client) CallsPerMinute() (rate, burst int) {
	if c.limiter == nil {
		return 0, 0
	}
	return int(c.limiter.all.perSec*60 + 0.5), int(c.limiter.all.burst)
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// checkKey refuses an empty key and one that could not be a header value
// (the message never repeats the key).
func checkKey(key string) error {
	if key == "" {
		return errors.New("api key is empty")
	}
	for _, r := range key {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r > unicode.MaxASCII {
			return errors.New("api key holds whitespace, control or non-ascii characters")
		}
	}
	return nil
}

// httpClients derives the API and file clients from the template.
func (c *Client) httpClients(tmpl *http.Client) (api, files *http.Client) {
	if tmpl == nil {
		tmpl = &http.Client{Transport: defaultTransport()}
	}
	f := *tmpl
	f.CheckRedirect = checkFileRedirect
	if f.Transport == nil {
		f.Transport = http.DefaultTransport
	}
	a := f
	a.CheckRedirect = checkRedirect
	a.Transport = &clockTransport{base: f.Transport}
	if c.limiter != nil {
		a.Transport = &limitTransport{base: a.Transport, lim: c.limiter}
	}
	return &a, &f
}

// defaultTransport has timeouts on every phase before the body, and none
// on the body itself (Download and API calls have their own).
func defaultTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 10 * time.Second
	t.ResponseHeaderTimeout = 60 * time.Second
	t.IdleConnTimeout = 90 * time.Second
	t.ExpectContinueTimeout = time.Second
	return t
}

// checkRedirect refuses a redirect to another host (or port) than the
// original request's, or from https to anything else.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return fmt.Errorf("%w: more than 10 redirects", ErrRedirect)
	}
	first := via[0].URL
	if first.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("%w: from https to %s", ErrRedirect, redactURL(req.URL))
	}
	if !sameHost(first, req.URL) {
		return fmt.Errorf("%w: to another host %s", ErrRedirect, redactURL(req.URL))
	}
	return nil
}

// checkFileRedirect follows a signed file link's redirect to any host
// (docs/wire.md 1: file links "may be on another host"; a link that hands
// over to a storage service's own signed URL is common), never from https
// to http, at most 10 times. A file request carries no API key to leak:
// the key is only ever set on API calls, whose client keeps checkRedirect.
func checkFileRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return fmt.Errorf("%w: more than 10 redirects", ErrRedirect)
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("%w: from https to %s", ErrRedirect, redactURL(req.URL))
	}
	return nil
}

// sameOrigin reports whether a and b share scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && sameHost(a, b)
}

// sameHost compares host names and ports, default ports filled in.
func sameHost(a, b *url.URL) bool {
	return strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// endpoint builds an API URL from path segments (each escaped) and a query.
func (c *Client) endpoint(q url.Values, segments ...string) string {
	var b strings.Builder
	b.WriteString(c.base.String())
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	if len(q) > 0 {
		b.WriteByte('?')
		b.WriteString(q.Encode())
	}
	return b.String()
}

// dotSegment finds in path (decoded: a server reads %2F as a slash and
// %2E as a dot before it cleans the path) a segment past the base URL's
// path that is ".", ".." or empty: an id that would reach another
// endpoint (an empty last one too: "datasets/" is the list's path).
func dotSegment(path, base string) (string, bool) {
	rest := strings.TrimPrefix(path, strings.TrimSuffix(base, "/"))
	rest = strings.TrimPrefix(rest, "/")
	if rest == "" {
		return "", false
	}
	for _, s := range strings.Split(rest, "/") {
		if s == "" || s == "." || s == ".." {
			return s, true
		}
	}
	return "", false
}

// newRequest builds an API request with the key. It refuses a URL that is
// not on the base URL's origin, so the key never leaves it.
func (c *Client) newRequest(ctx context.Context, method, rawURL string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, r)
	if err != nil {
		return nil, fmt.Errorf("build request %s %s: %w", method, redactRawURL(rawURL), err)
	}
	if !sameOrigin(req.URL, c.base) {
		return nil, fmt.Errorf("%w: %s", ErrForeignLink, redactURL(req.URL))
	}
	if seg, ok := dotSegment(req.URL.Path, c.base.Path); ok {
		return nil, fmt.Errorf("%w: the segment %q of %s (an id of %q?)", ErrDotSegment, seg, redactURL(req.URL), seg)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.ua)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// do sends req with hc and turns a non-2xx answer into an *APIError (its
// body read through MaxErrorBodyBytes). file marks a signed file link. On
// success the caller owns resp.Body.
func (c *Client) do(hc *http.Client, req *http.Request, op string, file bool) (*http.Response, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, redactTransport(err))
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBodyBytes))
	code, msg := parseErrorBody(b)
	return nil, &APIError{
		Op:         op,
		Method:     req.Method,
		Path:       req.URL.Path,
		Status:     resp.StatusCode,
		Code:       code,
		Message:    c.scrub(msg, req.URL),
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), c.now()),
		RetryAt:    parseRetryAt(resp.Header.Get("Retry-After"), c.now()),
		Err:        sentinelFor(resp.StatusCode, code, file),
	}
}

// parseErrorBody reads the contract's {"error": {"code", "message"}}, and,
// as a tolerant reader, the shapes a server may use instead: {"error":
// "code", "message": "…"} and a flat {"code", "message"}. Anything else
// gives empty strings (a file host's XML, a proxy's HTML).
func parseErrorBody(b []byte) (code, msg string) {
	var body struct {
		Error   json.RawMessage `json:"error"`
		Code    string          `json:"code"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(b, &body) != nil {
		return "", ""
	}
	var nested struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	var name string
	switch {
	case json.Unmarshal(body.Error, &nested) == nil && (nested.Code != "" || nested.Message != ""):
		return nested.Code, nested.Message
	case json.Unmarshal(body.Error, &name) == nil && name != "":
		return name, body.Message
	}
	return body.Code, body.Message
}

// urlInText finds absolute URLs in a server-provided text.
var urlInText = regexp.MustCompile(`https?://[^\s"'<>]+`)

// scrub shortens a server-provided text and removes from it the key, u's
// query string and the query string of any URL it quotes, should the
// server echo them.
func (c *Client) scrub(s string, u *url.URL) string {
	s = urlInText.ReplaceAllStringFunc(s, redactRawURL)
	if c.key != "" {
		s = strings.ReplaceAll(s, c.key, "[redacted]")
	}
	if u != nil && u.RawQuery != "" {
		s = strings.ReplaceAll(s, u.RawQuery, "[redacted]")
	}
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

// redactTransport hides the URL's query string in a *url.Error (the
// failing request's, or a redirect target's).
func redactTransport(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redactRawURL(ue.URL)
	}
	return err
}

// call makes one API call with retries and decodes a 2xx body with dec.
func (c *Client) call(ctx context.Context, op, method, rawURL string, body any, dec func([]byte) error) error {
	return c.send(ctx, exchange{op: op, method: method, url: rawURL, body: body},
		func(b []byte, _ http.Header) error { return dec(b) })
}

// exchange describes one API call for send.
type exchange struct {
	op, method, url string
	body            any         // marshalled as JSON; nil sends no body
	header          http.Header // extra request headers (Idempotency-Key, If-Match), the same on every try
	// once marks a call that is not safe to repeat: a failure after the
	// request may have reached the server (a connection lost or a timeout
	// after it was sent, a 5xx other than 503) is not retried and comes
	// back wrapping ErrAmbiguous. A refusal (429, 503) and a failure to
	// connect are still retried: nothing was done.
	once bool
}

// send makes one API call with retries and decodes a 2xx body, with the
// answer's headers, with dec.
func (c *Client) send(ctx context.Context, x exchange, dec func([]byte, http.Header) error) error {
	op, method := x.op, x.method
	var payload []byte
	if x.body != nil {
		var err error
		if payload, err = json.Marshal(x.body); err != nil {
			return fmt.Errorf("%s: encode request: %w", op, err)
		}
	}
	return c.retry(ctx, op, func(ctx context.Context) error {
		clock := c.newClock(ctx)
		defer clock.stop()
		req, err := c.newRequest(clock.ctx, method, x.url, payload)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		for k, vs := range x.header {
			req.Header[k] = vs
		}
		resp, err := c.do(c.api, req, op, false)
		if err != nil {
			return ambiguous(x.once, clock.timedOut(op, method, req.URL.Path, ctx, err))
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(clock.reader(resp.Body), MaxBodyBytes+1))
		if err != nil {
			err = fmt.Errorf("%s: read %s %s: %w: %w", op, method, req.URL.Path, errTransport, err)
			return ambiguous(x.once, clock.timedOut(op, method, req.URL.Path, ctx, err))
		}
		malformed := func(msg string) error {
			return &APIError{Op: op, Method: method, Path: req.URL.Path, Status: resp.StatusCode,
				Message: c.scrub(msg, req.URL), Err: ErrMalformed}
		}
		if len(b) > MaxBodyBytes {
			return malformedOnce(x.once, malformed(fmt.Sprintf("body over %d bytes", MaxBodyBytes)))
		}
		if err := dec(b, resp.Header); err != nil {
			return malformedOnce(x.once, malformed(err.Error()))
		}
		return nil
	})
}

// ambiguous marks, for a call made once, a failure after which the server
// may have carried the request out: every transient failure but a refusal
// (429, 503) and a failed connect.
func ambiguous(once bool, err error) error {
	if !once || !IsTransient(err) || errors.Is(err, ErrRateLimited) || errors.Is(err, ErrPlanUnavailable) {
		return err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return err
	}
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable {
		return err
	}
	return &ambiguousError{err}
}

// malformedOnce marks, for a call made once, a success whose answer could
// not be read: the server did it, and what it answered is lost.
func malformedOnce(once bool, err error) error {
	if once {
		return &ambiguousError{err}
	}
	return err
}

// ambiguousError is ErrAmbiguous with its cause; it is never transient.
type ambiguousError struct{ err error }

func (e *ambiguousError) Error() string {
	return e.err.Error() + " (the request may or may not have been carried out)"
}

func (e *ambiguousError) Is(target error) bool { return target == ErrAmbiguous }
func (e *ambiguousError) Unwrap() error        { return e.err }
