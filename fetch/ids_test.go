package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// idCalls are the client's calls that put an id from the network in a
// URL path.
var idCalls = map[string]func(ctx context.Context, c *Client, id string) error{
	"manifest": func(ctx context.Context, c *Client, id string) error { _, err := c.Manifest(ctx, id, ""); return err },
	"events": func(ctx context.Context, c *Client, id string) error {
		_, err := c.Events(ctx, id, "", 10, nil)
		return err
	},
	"subscription": func(ctx context.Context, c *Client, id string) error { _, err := c.Subscription(ctx, id); return err },
	"dataset":      func(ctx context.Context, c *Client, id string) error { _, err := c.Dataset(ctx, id); return err },
	"version":      func(ctx context.Context, c *Client, id string) error { _, err := c.Version(ctx, id, 1); return err },
	"links":        func(ctx context.Context, c *Client, id string) error { _, err := c.Links(ctx, id, 1, nil); return err },
	"schema":       func(ctx context.Context, c *Client, id string) error { _, err := c.Schema(ctx, id, 1); return err },
	"schemas":      func(ctx context.Context, c *Client, id string) error { _, err := c.Schemas(ctx, id); return err },
	"watch":        func(ctx context.Context, c *Client, id string) error { _, err := c.Watch(ctx, id); return err },
	"unwatch":      func(ctx context.Context, c *Client, id string) error { return c.Unwatch(ctx, id) },
	"dataset info": func(ctx context.Context, c *Client, id string) error { _, err := c.DatasetInfo(ctx, id); return err },
	"changes": func(ctx context.Context, c *Client, id string) error {
		_, err := c.Changes(ctx, id, 1, "", 10)
		return err
	},
	"rows": func(ctx context.Context, c *Client, id string) error {
		_, err := c.Rows(ctx, id, "", 10, nil)
		return err
	},
	"delete hook": func(ctx context.Context, c *Client, id string) error { return c.DeleteWebhook(ctx, id) },
	"test hook":   func(ctx context.Context, c *Client, id string) error { return c.TestWebhook(ctx, id) },
	"delete sub":  func(ctx context.Context, c *Client, id string) error { return c.DeleteSubscription(ctx, id) },
}

// An id from the network is one path segment: "/", "?", "#" and "%" are
// escaped in it, and an id that a server cleaning the path would take
// for another endpoint ("..", ".", "", "a/../b": %2F reads as a slash) is
// refused before anything is sent (ErrDotSegment).
func TestClient_idsStayOneSegment(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		mu.Unlock()
		writeJSON(w, 404, map[string]any{"error": map[string]any{"code": "not_found", "message": "no"}})
	}))
	defer srv.Close()
	c, _ := MustClient(t, srv.URL)
	ctx := context.Background()
	for name, call := range idCalls {
		for _, id := range []string{"..", ".", "", "a/../b", "../../v1/webhooks"} {
			if err := call(ctx, c, id); !errors.Is(err, ErrDotSegment) {
				t.Errorf("%s of %q: %v, want ErrDotSegment", name, id, err)
			}
		}
		mu.Lock()
		if len(paths) > 0 {
			t.Errorf("%s: sent %v", name, paths)
		}
		paths = nil
		mu.Unlock()
		call(ctx, c, "a/b?c#d%e")
		mu.Lock()
		if len(paths) != 1 || !containsSegment(paths[0], "a%2Fb%3Fc%23d%25e") {
			t.Errorf("%s of a/b?c#d%%e sent %v, want the id as one escaped segment", name, paths)
		}
		paths = nil
		mu.Unlock()
	}
}

func containsSegment(path, seg string) bool {
	for i := 0; i+len(seg) <= len(path); i++ {
		if path[i:i+len(seg)] == seg && path[i-1] == '/' && (i+len(seg) == len(path) || path[i+len(seg)] == '/') {
			return true
		}
	}
	return false
}
