package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/replica"
)

// A watch-only first sync can read a dataset whole for minutes: its bar
// names the dataset it reads, and no bar is drawn for
// watches when there are none, nor with the last load's dataset.
func TestProgress_watchBarNamesTheDataset(t *testing.T) {
	var buf bytes.Buffer
	v := drawProgress(&buf)
	v.update(replica.Progress{Phase: replica.PhaseLoad, DatasetID: "ds_loaded", Version: 1})
	v.update(replica.Progress{Phase: replica.PhaseBootstrap, Done: 1, Total: 1})
	v.update(replica.Progress{Phase: replica.PhaseWatch, DatasetID: "ds_watched", Done: 0, Total: 1})
	time.Sleep(1200 * time.Millisecond) // a few of mpb's refreshes
	v.wait()
	out := buf.String()
	frame := out[strings.LastIndex(out, "datasets"):]
	watches, datasets := frame[strings.Index(frame, "watches"):], frame[:strings.Index(frame, "watches")]
	if !strings.Contains(watches, "watch ds_watched") || strings.Contains(watches, "ds_loaded") || strings.Contains(datasets, "ds_watched") {
		t.Fatalf("the watches bar should name the dataset it reads (and only it):\n%q", frame)
	}

	buf.Reset()
	v = drawProgress(&buf)
	v.update(replica.Progress{Phase: replica.PhaseWatch, Done: 0, Total: 0})
	time.Sleep(300 * time.Millisecond)
	v.wait()
	if strings.Contains(buf.String(), "watches") {
		t.Fatalf("no watches, yet a bar for them:\n%q", buf.String())
	}
}
