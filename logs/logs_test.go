package logs

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A nil error leaves no "error" key; a set one is its text; a duration is
// an integer count of milliseconds; a nil logger is one that can be called.
func TestAttrs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("a", Err(nil), AnErr("cause", nil), Ms("took_ms", 1500*time.Millisecond+time.Microsecond))
	log.Info("b", Err(errors.New("disk full")), AnErr("cause", errors.New("stopped")))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines:\n%s", buf.String())
	}
	if strings.Contains(lines[0], "error") || strings.Contains(lines[0], "cause") || !strings.Contains(lines[0], `"took_ms":1500}`) {
		t.Fatalf("a nil error written or the duration not whole milliseconds: %s", lines[0])
	}
	if !strings.Contains(lines[1], `"error":"disk full"`) || !strings.Contains(lines[1], `"cause":"stopped"`) {
		t.Fatalf("the errors are not their text: %s", lines[1])
	}
	OrDiscard(nil).Error("nothing")
	if got := OrDiscard(log); got != log {
		t.Fatal("OrDiscard replaced a logger that was set")
	}
}
