package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of a Standard Webhooks delivery.
const (
	// HeaderID names the delivery; it stays the same on each retry and is
	// not the event id, which is in the body.
	HeaderID = "webhook-id"
	// HeaderTimestamp is the Unix time, in seconds, when the delivery was
	// signed.
	HeaderTimestamp = "webhook-timestamp"
	// HeaderSignature holds one or more space-separated "v1,<base64>" items.
	HeaderSignature = "webhook-signature"
)

const (
	// DefaultTolerance is how far webhook-timestamp may be from now, in
	// either direction, before a delivery is refused.
	DefaultTolerance = 5 * time.Minute

	// secretPrefix starts a Ploti (and Standard Webhooks) secret.
	secretPrefix = "whsec_"
	// signatureVersion is the only signature scheme this package knows.
	signatureVersion = "v1"
)

// Verifier checks Standard Webhooks signatures with one secret. It is safe
// for concurrent use. Create one with NewVerifier.
type Verifier struct {
	key       []byte
	now       func() time.Time
	tolerance time.Duration
}

// Option configures a Verifier.
type Option func(*Verifier)

// WithNow sets the clock that timestamps are checked against; the default
// is time.Now. A nil f leaves the default.
func WithNow(f func() time.Time) Option {
	return func(v *Verifier) {
		if f != nil {
			v.now = f
		}
	}
}

// WithTolerance sets how far webhook-timestamp may be from now in either
// direction; the default is DefaultTolerance. A value of zero or less leaves
// the default.
func WithTolerance(d time.Duration) Option {
	return func(v *Verifier) {
		if d > 0 {
			v.tolerance = d
		}
	}
}

// NewVerifier returns a Verifier for secret, which is "whsec_" followed by
// base64, or the base64 alone. It returns ErrBadSecret for an empty secret
// or one that does not decode to at least one byte.
func NewVerifier(secret string, opts ...Option) (*Verifier, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return nil, err
	}
	v := &Verifier{key: key, now: time.Now, tolerance: DefaultTolerance}
	for _, opt := range opts {
		opt(v)
	}
	return v, nil
}

// decodeSecret returns the HMAC key of secret. Its errors never quote the
// secret, not even the position of a bad byte.
func decodeSecret(secret string) ([]byte, error) {
	b64 := strings.TrimPrefix(secret, secretPrefix)
	if b64 == "" {
		return nil, fmt.Errorf("decode secret: empty: %w", ErrBadSecret)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("decode secret: not base64: %w", ErrBadSecret)
	}
	if len(key) == 0 {
		return nil, fmt.Errorf("decode secret: empty key: %w", ErrBadSecret)
	}
	return key, nil
}

// String hides the key, so that a Verifier printed with %v or %+v does not
// leak the secret.
func (v *Verifier) String() string { return "webhook.Verifier{key:REDACTED}" }

// GoString hides the key from %#v.
func (v *Verifier) GoString() string { return v.String() }

// Verify checks the delivery's headers against its raw body. It returns nil,
// or an error that wraps ErrMissingHeaders, ErrInvalidHeaders,
// ErrTimestampTooOld, ErrTimestampTooNew or ErrInvalidSignature. The
// timestamp is checked before the signature, as the Standard Webhooks
// libraries do.
func (v *Verifier) Verify(h http.Header, body []byte) error {
	id := h.Get(HeaderID)
	tsText := h.Get(HeaderTimestamp)
	sigs := strings.Join(h.Values(HeaderSignature), " ")
	if id == "" || tsText == "" || strings.TrimSpace(sigs) == "" {
		return fmt.Errorf("verify webhook: %w", ErrMissingHeaders)
	}
	ts, err := parseTimestamp(tsText)
	if err != nil {
		return err
	}
	if err := v.checkTimestamp(ts); err != nil {
		return err
	}
	want := mac(v.key, id, ts, body)
	if !matchAny(sigs, want) {
		return fmt.Errorf("verify webhook: %w", ErrInvalidSignature)
	}
	return nil
}

// parseTimestamp reads webhook-timestamp. Only the canonical decimal form is
// accepted, so the signed text and the parsed value cannot disagree.
func parseTimestamp(s string) (int64, error) {
	ts, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(ts, 10) != s {
		return 0, fmt.Errorf("verify webhook: timestamp is not Unix seconds: %w", ErrInvalidHeaders)
	}
	return ts, nil
}

// checkTimestamp refuses a timestamp more than the tolerance away from now.
func (v *Verifier) checkTimestamp(ts int64) error {
	now := v.now()
	signed := time.Unix(ts, 0)
	if age := now.Sub(signed); age > v.tolerance {
		return fmt.Errorf("verify webhook: signed %s ago: %w", age.Truncate(time.Second), ErrTimestampTooOld)
	}
	if ahead := signed.Sub(now); ahead > v.tolerance {
		return fmt.Errorf("verify webhook: signed %s ahead: %w", ahead.Truncate(time.Second), ErrTimestampTooNew)
	}
	return nil
}

// matchAny reports whether any v1 item of the signature header equals want.
// Items of other versions, and items that are not base64, are ignored.
func matchAny(header string, want []byte) bool {
	for _, item := range strings.Fields(header) {
		version, b64, ok := strings.Cut(item, ",")
		if !ok || version != signatureVersion {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

// mac is HMAC-SHA256 of "<id>.<ts>.<body>" under key.
func mac(key []byte, id string, ts int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, ts, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Sign returns the webhook-signature item "v1,<base64>" for a delivery with
// id msgID signed at ts (truncated to whole seconds). It returns
// ErrBadSecret if secret would not be accepted by NewVerifier. While a
// secret rotates, a sender joins the items of each secret with a space.
func Sign(secret, msgID string, ts time.Time, body []byte) (string, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return "", fmt.Errorf("sign webhook: %w", err)
	}
	sum := mac(key, msgID, ts.Unix(), body)
	return signatureVersion + "," + base64.StdEncoding.EncodeToString(sum), nil
}
