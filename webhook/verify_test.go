package webhook_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/ploti-replica/ploti-replica/webhook"
)

// vectorsPath is the shared Standard Webhooks test vectors, relative to this
// package's directory.
var vectorsPath = filepath.Join("..", "..", "shared", "testvectors", "standard-webhooks.json")

// vector is one delivery from the test vectors file.
type vector struct {
	Why       string `json:"why"`
	Secret    string `json:"secret"`
	ID        string `json:"id"`
	Timestamp int64  `json:"timestamp"`
	Body      string `json:"body"`
	Signature string `json:"signature"`
}

// vectors is the test vectors file.
type vectors struct {
	Valid   []vector `json:"valid"`
	Invalid []vector `json:"invalid"`
}

// mustLoadVectors reads the shared vectors, skipping the test when the file
// is absent (it is present in CI).
func mustLoadVectors(tb testing.TB) vectors {
	tb.Helper()
	b, err := os.ReadFile(vectorsPath)
	if errors.Is(err, fs.ErrNotExist) {
		tb.Skipf("test vectors %s not found: run from a checkout next to /work/shared (present in CI)", vectorsPath)
	}
	if err != nil {
		tb.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatalf("decode %s: %v", vectorsPath, err)
	}
	if len(v.Valid) == 0 || len(v.Invalid) == 0 {
		tb.Fatalf("%s: no valid or no invalid vectors", vectorsPath)
	}
	return v
}

// testSecret is the secret the tests sign with; testKey is its key.
var (
	testKey       = []byte("ploti-replica webhook test key, 32b")
	testSecret    = "whsec_" + base64.StdEncoding.EncodeToString(testKey)
	otherSecret   = "whsec_" + base64.StdEncoding.EncodeToString([]byte("another key entirely"))
	testNow       = time.Unix(1_800_000_000, 0)
	fixedClock    = func() time.Time { return testNow }
	testTolerance = webhook.DefaultTolerance
)

// mustVerifier returns a Verifier for secret whose clock is now.
func mustVerifier(tb testing.TB, secret string, now func() time.Time) *webhook.Verifier {
	tb.Helper()
	v, err := webhook.NewVerifier(secret, webhook.WithNow(now))
	if err != nil {
		tb.Fatalf("NewVerifier: %v", err)
	}
	return v
}

// mustSign signs body with secret and returns the signature item.
func mustSign(tb testing.TB, secret, id string, ts time.Time, body []byte) string {
	tb.Helper()
	sig, err := webhook.Sign(secret, id, ts, body)
	if err != nil {
		tb.Fatalf("Sign: %v", err)
	}
	return sig
}

// headers returns delivery headers; an empty value leaves the header out.
func headers(id, ts, sig string) http.Header {
	h := http.Header{}
	for k, v := range map[string]string{webhook.HeaderID: id, webhook.HeaderTimestamp: ts, webhook.HeaderSignature: sig} {
		if v != "" {
			h.Set(k, v)
		}
	}
	return h
}

func TestVerifier_Verify_vectors(t *testing.T) {
	vs := mustLoadVectors(t)
	for i, tc := range vs.Valid {
		t.Run(fmt.Sprintf("valid %d %s", i, tc.ID), func(t *testing.T) {
			v := mustVerifier(t, tc.Secret, func() time.Time { return time.Unix(tc.Timestamp, 0) })
			h := headers(tc.ID, strconv.FormatInt(tc.Timestamp, 10), tc.Signature)
			if err := v.Verify(h, []byte(tc.Body)); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got, want := mustSign(t, tc.Secret, tc.ID, time.Unix(tc.Timestamp, 0), []byte(tc.Body)), tc.Signature; got != want {
				t.Fatalf("Sign = %q, want %q", got, want)
			}
		})
	}
	for i, tc := range vs.Invalid {
		t.Run(fmt.Sprintf("invalid %d %s", i, tc.Why), func(t *testing.T) {
			clock := func() time.Time { return time.Unix(tc.Timestamp, 0) }
			v, err := webhook.NewVerifier(tc.Secret, webhook.WithNow(clock))
			if err != nil {
				if !errors.Is(err, webhook.ErrBadSecret) {
					t.Fatalf("NewVerifier: %v, want ErrBadSecret", err)
				}
				return // refused at construction, e.g. the empty secret
			}
			h := headers(tc.ID, strconv.FormatInt(tc.Timestamp, 10), tc.Signature)
			if err := v.Verify(h, []byte(tc.Body)); !errors.Is(err, webhook.ErrInvalidSignature) {
				t.Fatalf("Verify = %v, want ErrInvalidSignature", err)
			}
		})
	}
}

func TestVerifier_Verify(t *testing.T) {
	const id = "msg_1"
	body := []byte(`{"id":"evt_1","type":"feed.dataset.updated","data":{}}`)
	ts := strconv.FormatInt(testNow.Unix(), 10)
	good := mustSign(t, testSecret, id, testNow, body)
	other := mustSign(t, otherSecret, id, testNow, body)
	goodB64 := strings.TrimPrefix(good, "v1,")
	at := func(d time.Duration) (string, string) {
		signed := testNow.Add(d)
		return strconv.FormatInt(signed.Unix(), 10), mustSign(t, testSecret, id, signed, body)
	}
	oldTS, oldSig := at(-testTolerance - time.Second)
	newTS, newSig := at(testTolerance + time.Second)
	edgeOldTS, edgeOldSig := at(-testTolerance)
	edgeNewTS, edgeNewSig := at(testTolerance)

	tests := []struct {
		name string
		h    http.Header
		body []byte
		want error
	}{
		{name: "valid", h: headers(id, ts, good), body: body},
		{name: "rotated secret, match last", h: headers(id, ts, other+" "+good), body: body},
		{name: "rotated secret, match first", h: headers(id, ts, good+" "+other), body: body},
		{name: "rotated, other versions ignored", h: headers(id, ts, "v1a,"+goodB64+" v2,"+goodB64+" "+good), body: body},
		{name: "extra spaces", h: headers(id, ts, "  "+other+"   "+good+" "), body: body},
		{name: "signature in two header lines", h: http.Header{
			"Webhook-Id": {id}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {other, good}}, body: body},
		{name: "wrong signature", h: headers(id, ts, other), body: body, want: webhook.ErrInvalidSignature},
		{name: "several wrong signatures", h: headers(id, ts, other+" "+other), body: body, want: webhook.ErrInvalidSignature},
		{name: "right bytes, other version only", h: headers(id, ts, "v2,"+goodB64), body: body, want: webhook.ErrInvalidSignature},
		{name: "no comma", h: headers(id, ts, "v1"+goodB64), body: body, want: webhook.ErrInvalidSignature},
		{name: "not base64", h: headers(id, ts, "v1,!!!"), body: body, want: webhook.ErrInvalidSignature},
		{name: "truncated signature", h: headers(id, ts, good[:len(good)-4]), body: body, want: webhook.ErrInvalidSignature},
		{name: "body changed", h: headers(id, ts, good), body: append(append([]byte{}, body...), ' '), want: webhook.ErrInvalidSignature},
		{name: "other id", h: headers("msg_2", ts, good), body: body, want: webhook.ErrInvalidSignature},
		{name: "missing id", h: headers("", ts, good), body: body, want: webhook.ErrMissingHeaders},
		{name: "missing timestamp", h: headers(id, "", good), body: body, want: webhook.ErrMissingHeaders},
		{name: "missing signature", h: headers(id, ts, ""), body: body, want: webhook.ErrMissingHeaders},
		{name: "blank signature", h: headers(id, ts, "   "), body: body, want: webhook.ErrMissingHeaders},
		{name: "no headers", h: http.Header{}, body: body, want: webhook.ErrMissingHeaders},
		{name: "timestamp not a number", h: headers(id, "soon", good), body: body, want: webhook.ErrInvalidHeaders},
		{name: "timestamp in milliseconds form", h: headers(id, ts+".0", good), body: body, want: webhook.ErrInvalidHeaders},
		{name: "timestamp not canonical", h: headers(id, "+"+ts, good), body: body, want: webhook.ErrInvalidHeaders},
		{name: "too old", h: headers(id, oldTS, oldSig), body: body, want: webhook.ErrTimestampTooOld},
		{name: "too new", h: headers(id, newTS, newSig), body: body, want: webhook.ErrTimestampTooNew},
		{name: "exactly tolerance old", h: headers(id, edgeOldTS, edgeOldSig), body: body},
		{name: "exactly tolerance ahead", h: headers(id, edgeNewTS, edgeNewSig), body: body},
		{name: "too old and badly signed", h: headers(id, oldTS, other), body: body, want: webhook.ErrTimestampTooOld},
	}
	v := mustVerifier(t, testSecret, fixedClock)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Verify(tc.h, tc.body)
			if tc.want == nil && err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestWithTolerance(t *testing.T) {
	body := []byte(`{}`)
	ts := testNow.Add(-2 * time.Minute)
	h := headers("msg_1", strconv.FormatInt(ts.Unix(), 10), mustSign(t, testSecret, "msg_1", ts, body))
	v, err := webhook.NewVerifier(testSecret, webhook.WithNow(fixedClock), webhook.WithTolerance(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(h, body); !errors.Is(err, webhook.ErrTimestampTooOld) {
		t.Fatalf("Verify = %v, want ErrTimestampTooOld", err)
	}
}

func TestNewVerifier(t *testing.T) {
	tests := []struct {
		name    string
		secret  string
		wantErr bool
	}{
		{name: "with prefix", secret: testSecret},
		{name: "without prefix", secret: strings.TrimPrefix(testSecret, "whsec_")},
		{name: "empty", secret: "", wantErr: true},
		{name: "prefix only", secret: "whsec_", wantErr: true},
		{name: "not base64", secret: "whsec_not base64 at all!", wantErr: true},
		{name: "bad padding", secret: "whsec_abc", wantErr: true},
		{name: "padding only", secret: "whsec_====", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := webhook.NewVerifier(tc.secret)
			if tc.wantErr {
				if !errors.Is(err, webhook.ErrBadSecret) || v != nil {
					t.Fatalf("NewVerifier = %v, %v; want nil, ErrBadSecret", v, err)
				}
				if _, err := webhook.Sign(tc.secret, "msg", testNow, nil); !errors.Is(err, webhook.ErrBadSecret) {
					t.Fatalf("Sign = %v, want ErrBadSecret", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewVerifier: %v", err)
			}
		})
	}
}

// TestVerifier_unprefixedSecret checks that a secret with and without the
// whsec_ prefix sign alike, as the Standard Webhooks libraries do.
func TestVerifier_unprefixedSecret(t *testing.T) {
	body := []byte(`{"a":1}`)
	sig := mustSign(t, testSecret, "msg_1", testNow, body)
	v := mustVerifier(t, strings.TrimPrefix(testSecret, "whsec_"), fixedClock)
	if err := v.Verify(headers("msg_1", strconv.FormatInt(testNow.Unix(), 10), sig), body); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

// TestSign_matchesStandardLibrary cross-checks Sign against the Standard
// Webhooks reference library, and our Verifier against its signatures.
func TestSign_matchesStandardLibrary(t *testing.T) {
	lib, err := standardwebhooks.NewWebhook(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	v := mustVerifier(t, testSecret, func() time.Time { return now })
	tests := []struct {
		name string
		id   string
		ts   time.Time
		body string
	}{
		{name: "feed event", id: "msg_a", ts: now, body: `{"id":"evt_1","type":"feed.dataset.updated"}`},
		{name: "empty body", id: "msg_b", ts: now, body: ``},
		{name: "sub-second time", id: "msg_c", ts: now.Add(-1500 * time.Millisecond), body: "x\n"},
		{name: "unicode", id: "msg_ü", ts: now, body: `{"name":"Zürich ✓"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, err := lib.Sign(tc.id, tc.ts, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := mustSign(t, testSecret, tc.id, tc.ts, []byte(tc.body)); got != want {
				t.Fatalf("Sign = %q, library = %q", got, want)
			}
			h := headers(tc.id, strconv.FormatInt(tc.ts.Unix(), 10), want)
			if err := v.Verify(h, []byte(tc.body)); err != nil {
				t.Fatalf("Verify(library signature): %v", err)
			}
			if err := lib.Verify([]byte(tc.body), h); err != nil {
				t.Fatalf("library Verify: %v", err)
			}
		})
	}
}

// TestSecretNeverInErrors guards docs/design.md invariant 5 for the webhook
// secret: no error string or formatted Verifier contains it or its key.
func TestSecretNeverInErrors(t *testing.T) {
	secrets := []string{
		testSecret,
		strings.TrimPrefix(testSecret, "whsec_"),
		"whsec_c2VjcmV0LXZhbHVl!",   // not base64 at the end
		"whsec_c2VjcmV0LXZhbHVlx",   // bad length
		"whsec_c2VjcmV0LXZhbHVl===", // bad padding
	}
	body := []byte(`{}`)
	var texts []string
	for _, s := range secrets {
		v, err := webhook.NewVerifier(s, webhook.WithNow(fixedClock))
		if err != nil {
			texts = append(texts, err.Error())
		} else {
			texts = append(texts, fmt.Sprintf("%v|%+v|%#v|%s", v, v, v, v))
			for _, h := range []http.Header{
				headers("m", "1", "v1,AAAA"),
				headers("m", strconv.FormatInt(testNow.Unix(), 10), "v1,AAAA"),
				headers("m", "x", "v1,AAAA"),
				headers("m", strconv.FormatInt(testNow.Add(time.Hour).Unix(), 10), "v1,AAAA"),
				{},
			} {
				if err := v.Verify(h, body); err != nil {
					texts = append(texts, err.Error())
				}
			}
		}
		if _, err := webhook.Sign(s, "m", testNow, body); err != nil {
			texts = append(texts, err.Error())
		}
	}
	if len(texts) < 10 {
		t.Fatalf("only %d texts to check", len(texts))
	}
	forbidden := []string{"c2VjcmV0LXZhbHVl", "secret-value", strings.TrimPrefix(testSecret, "whsec_"), string(testKey)}
	for _, text := range texts {
		for _, f := range forbidden {
			if strings.Contains(text, f) {
				t.Errorf("%q contains the secret %q", text, f)
			}
		}
	}
}
