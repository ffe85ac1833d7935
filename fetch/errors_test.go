package fetch

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// TestClient_ErrorSentinels maps each answer of docs/wire.md 1 to its
// sentinel, on the API and on a file link.
func TestClient_ErrorSentinels(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		code      string
		file      bool
		want      error
		wantGone  bool
		transient bool
	}{
		{name: "400", status: 400, code: "invalid_input", want: ErrInvalidInput},
		{name: "401", status: 401, code: "unauthorized", want: ErrUnauthorized},
		{name: "403 api", status: 403, code: "forbidden", want: ErrUnauthorized},
		{name: "404", status: 404, code: "not_found", want: ErrNotFound, wantGone: true},
		{name: "409 not_subscribed", status: 409, code: "not_subscribed", want: ErrNotSubscribed, wantGone: true},
		{name: "409 outside_coverage", status: 409, code: "outside_coverage", want: ErrOutsideCoverage, wantGone: true},
		{name: "409 not_deliverable", status: 409, code: "not_deliverable", want: ErrNotDeliverable, wantGone: true},
		{name: "409 busy", status: 409, code: "busy", want: ErrBusy},
		{name: "409 watch_limit", status: 409, code: "watch_limit", want: ErrWatchLimit},
		{name: "409 webhook_limit", status: 409, code: "webhook_limit", want: ErrWebhookLimit},
		{name: "409 other", status: 409, code: "whatever", want: ErrConflict},
		{name: "410", status: 410, code: "expired", want: ErrExpired},
		{name: "412", status: 412, code: "precondition_failed", want: ErrPreconditionFailed},
		{name: "422", status: 422, code: "", want: ErrUnexpectedStatus},
		{name: "429", status: 429, code: "rate_limited", want: ErrRateLimited, transient: true},
		{name: "503 plan_unavailable", status: 503, code: "plan_unavailable", want: ErrPlanUnavailable, transient: true},
		{name: "503 bare", status: 503, want: ErrServer, transient: true},
		{name: "500", status: 500, want: ErrServer, transient: true},
		{name: "file 403 link_expired", status: 403, code: "link_expired", file: true, want: ErrLinkExpired},
		{name: "file 403 link_invalid", status: 403, code: "link_invalid", file: true, want: ErrLinkInvalid},
		{name: "file 403 no code", status: 403, file: true, want: ErrLinkExpired},
		{name: "file 404", status: 404, file: true, want: ErrFileNotFound},
		{name: "file 404 is a not found", status: 404, file: true, want: ErrNotFound},
		{name: "file 500", status: 500, file: true, want: ErrServer, transient: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.code == "" {
					w.WriteHeader(tt.status)
					return
				}
				writeError(w, tt.status, tt.code, "told "+tt.code)
			})
			c, _ := MustClient(t, srv.URL, func(o *Options) { o.MaxAttempts = 1 })
			var err error
			if tt.file {
				_, err = c.Download(context.Background(), ploti.File{URL: srv.URL + "/f.bin?sig=x"}, "f.bin", nil)
			} else {
				_, err = c.Dataset(context.Background(), "ds_a")
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err %T is not an *APIError", err)
			}
			if ae.Status != tt.status || ae.Code != tt.code {
				t.Fatalf("APIError status %d code %q, want %d %q", ae.Status, ae.Code, tt.status, tt.code)
			}
			if got := IsDatasetGone(err); got != tt.wantGone {
				t.Fatalf("IsDatasetGone = %v, want %v", got, tt.wantGone)
			}
			if got := errors.Is(err, ErrNoLongerDelivered); got != tt.wantGone {
				t.Fatalf("errors.Is(ErrNoLongerDelivered) = %v, want %v", got, tt.wantGone)
			}
			if got := IsTransient(err); got != tt.transient {
				t.Fatalf("IsTransient = %v, want %v", got, tt.transient)
			}
		})
	}
}

func TestAPIError_Error(t *testing.T) {
	tests := []struct {
		err  *APIError
		want string
	}{
		{&APIError{Op: "get manifest sub_1", Method: "GET", Path: "/v1/feeds/subscriptions/sub_1/manifest", Status: 410, Code: "expired", Message: "cursor pruned", Err: ErrExpired},
			"get manifest sub_1: GET /v1/feeds/subscriptions/sub_1/manifest: 410 expired: cursor pruned"},
		{&APIError{Op: "get dataset ds_a", Method: "GET", Path: "/v1/feeds/datasets/ds_a", Status: 502, Err: ErrServer},
			"get dataset ds_a: GET /v1/feeds/datasets/ds_a: 502 bad gateway"},
		{&APIError{Op: "get dataset ds_a", Method: "GET", Path: "/v1/feeds/datasets/ds_a", Status: 200, Message: "unexpected EOF", Err: ErrMalformed},
			"get dataset ds_a: GET /v1/feeds/datasets/ds_a: malformed response: unexpected EOF"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if strings.Count(tt.err.Error(), tt.err.Op) != 1 {
			t.Errorf("op appears more than once in %q", tt.err.Error())
		}
	}
}

// TestClient_NoSecrets guards docs/design.md invariant 5: the API key and a
// signed link's query string reach no error string and no log line.
func TestClient_NoSecrets(t *testing.T) {
	const sig = "X-Sig=TOPSECRETSIGNATURE&expires=1700000000"
	secrets := []string{testKey, "TOPSECRETSIGNATURE"}
	echo := "echo " + testKey + " " + sig + " and http://files.test/p0.parquet?" + sig

	files := newRecorder(t, nil)
	other := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) })
	api := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/bad-json"):
			w.Write([]byte(`{"id": "` + echo + ``))
		case strings.HasSuffix(r.URL.Path, "/bad-time"):
			w.Write([]byte(`{"datasetId": "ds_a", "version": 1, "publishedAt": "` + echo + `"}`))
		default:
			writeError(w, 500, "internal", "see http://files.test/p0.parquet?"+sig)
		}
	})
	files.SetHandler(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/expired":
			writeError(w, 403, "link_expired", "link "+r.URL.String()+" "+echo)
		case "/xml":
			w.WriteHeader(403)
			w.Write([]byte("<Error><SignatureProvided>" + sig + "</SignatureProvided></Error>"))
		case "/redirect":
			http.Redirect(w, r, other.URL+"/x?"+sig, http.StatusFound)
		default:
			w.Write([]byte("not what the sha says"))
		}
	})
	closed := newRecorder(t, nil)
	closedURL := closed.URL
	closed.Close()

	var logs bytes.Buffer
	c, _ := MustClient(t, api.URL, func(o *Options) {
		o.MaxAttempts = 2
		o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	ctx := context.Background()
	dl := func(u string) func() error {
		return func() error {
			f := ploti.File{URL: u, SHA256: strings.Repeat("0", 64)}
			_, err := c.Download(ctx, f, "f.bin", func(context.Context) (ploti.File, error) { return f, nil })
			return err
		}
	}
	calls := map[string]func() error{
		"api 500 echo":         func() error { _, err := c.Dataset(ctx, "ds_a"); return err },
		"api malformed echo":   func() error { _, err := c.Dataset(ctx, "bad-json"); return err },
		"api bad time echo":    func() error { _, err := c.VersionByLink(ctx, api.URL+"/v1/bad-time?"+sig); return err },
		"foreign link":         func() error { _, err := c.VersionByLink(ctx, files.URL+"/v1/x?"+sig); return err },
		"file 403 echo":        dl(files.URL + "/expired?" + sig),
		"file 403 xml":         dl(files.URL + "/xml?" + sig),
		"file redirect":        dl(files.URL + "/redirect?" + sig),
		"file checksum":        dl(files.URL + "/ok?" + sig),
		"file host down":       dl(closedURL + "/f?" + sig),
		"file link not http":   dl("ftp://files.test/f?" + sig),
		"file link unparsable": dl("http://[::1/f?" + sig),
	}
	for name, call := range calls {
		err := call()
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: error shows a secret: %v", name, err)
			}
		}
	}
	if logs.Len() == 0 {
		t.Fatal("no log lines to check")
	}
	for _, s := range secrets {
		if strings.Contains(logs.String(), s) {
			t.Errorf("a log line shows a secret:\n%s", logs.String())
		}
	}
}

// docs/wire.md 1 pins the error envelope {"error": {"code", "message"}};
// "a client built on this page must still be tolerant", so the code is
// also read from {"error": "code"} and a flat {"code"}, and the sentinel
// follows it: a links.version 409 not_subscribed means the dataset left
// whichever shape it came in.
func TestParseErrorBody_shapes(t *testing.T) {
	for _, tc := range []struct{ body, code, msg string }{
		{`{"error": {"code": "not_subscribed", "message": "gone"}}`, "not_subscribed", "gone"},
		{`{"error": "not_subscribed", "message": "gone"}`, "not_subscribed", "gone"},
		{`{"code": "not_subscribed", "message": "gone"}`, "not_subscribed", "gone"},
		{`{"error": {"code": "busy"}, "extra": 1}`, "busy", ""},
		{`{"error": null}`, "", ""},
		{`<Error><Code>AccessDenied</Code></Error>`, "", ""},
		{``, "", ""},
	} {
		code, msg := parseErrorBody([]byte(tc.body))
		if code != tc.code || msg != tc.msg {
			t.Errorf("parseErrorBody(%s) = %q, %q; want %q, %q", tc.body, code, msg, tc.code, tc.msg)
		}
	}
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(409)
		io.WriteString(w, `{"code": "not_subscribed", "message": "no subscription delivers it"}`)
	})
	c, _ := MustClient(t, srv.URL)
	_, err := c.Version(context.Background(), "ds_a", 3)
	if !errors.Is(err, ErrNotSubscribed) || !IsDatasetGone(err) {
		t.Fatalf("a flat error body: %v, want ErrNotSubscribed (the dataset left)", err)
	}
}
