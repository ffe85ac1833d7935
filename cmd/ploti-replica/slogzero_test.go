package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// The library's slog lines come out as the CLI's zerolog lines always did:
// "message", a lowercase level, integers as integers, an error as its
// text, groups flattened, and a nil error left out.
func TestZerologHandler_writesZerologLines(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(newZerologHandler(zerolog.New(&buf).Level(zerolog.DebugLevel)))
	log = log.With(slog.String("db", "feeds.duckdb")).WithGroup("sync").With(slog.Int("page", 3))
	log.Warn("event not applied", slog.Int64("duration_ms", 1500), slog.Any("error", errors.New("bad json")),
		slog.Attr{}, slog.Group("ds", slog.String("id", "ds_x")), slog.Any("failed", []string{"a", "b"}),
		slog.Duration("took", 2*time.Second))
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not one JSON line: %v\n%s", err, buf.String())
	}
	want := map[string]any{"level": "warn", "message": "event not applied", "db": "feeds.duckdb", "sync.page": 3.0,
		"sync.duration_ms": 1500.0, "sync.error": "bad json", "sync.ds.id": "ds_x", "sync.failed": []any{"a", "b"},
		"sync.took": 2000.0}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if gv, ok := got[k]; !ok || !equalJSON(gv, v) {
			t.Fatalf("%s: got %v, want %v\n%s", k, gv, v, buf.String())
		}
	}
	if s := buf.String(); !strings.Contains(s, `"sync.duration_ms":1500,`) || !strings.Contains(s, `"sync.took":2000,`) {
		t.Fatalf("a count of milliseconds is not written as an integer:\n%s", s)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// Enabled follows the zerolog logger's level, so that --log-level warn
// drops the library's info lines before they are built.
func TestZerologHandler_honoursTheLevel(t *testing.T) {
	var buf bytes.Buffer
	h := newZerologHandler(zerolog.New(&buf).Level(zerolog.WarnLevel))
	ctx := context.Background()
	if h.Enabled(ctx, slog.LevelInfo) || !h.Enabled(ctx, slog.LevelWarn) || !h.Enabled(ctx, slog.LevelError) {
		t.Fatal("Enabled does not follow the zerolog level warn")
	}
	log := slog.New(h)
	log.Info("dropped")
	log.Debug("dropped")
	log.Error("kept")
	if s := buf.String(); strings.Contains(s, "dropped") || !strings.Contains(s, `"level":"error","message":"kept"`) {
		t.Fatalf("the warn level let through:\n%s", s)
	}
}
