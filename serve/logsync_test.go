package serve

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"
)

// A sync's log line says "behind" only when the sync counted it (a
// subscription's log, read after the sync): a watch-only file has no log
// to be behind on, and -1 there read as a count.
func TestDaemon_logSyncLeavesOutBehindNotCounted(t *testing.T) {
	for _, tc := range []struct {
		behind int
		want   any
	}{{-1, nil}, {0, 0.0}, {3, 3.0}} {
		var buf bytes.Buffer
		d := &Daemon{log: slog.New(slog.NewJSONHandler(&buf, nil))}
		d.logSync("start", ResultOK, syncOutcome{behind: tc.behind}, time.Second)
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatalf("%v: %s", err, buf.String())
		}
		got, ok := line[logKeyBehind]
		if tc.want == nil && ok || tc.want != nil && got != tc.want {
			t.Errorf("behind %d: the log line has %q = %v (present %v); want %v", tc.behind, logKeyBehind, got, ok, tc.want)
		}
	}
}
