package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The summary line is the last line of `bench`, keys in the order.
func TestReport_SummaryLine(t *testing.T) {
	r := newReport()
	r.Summary["file_growth"] = 1.5
	r.Summary["load_ratio"] = 1.0412
	r.Summary["events_per_s"] = 3104.6
	r.Summary["rss_ratio"] = math.NaN()
	r.Summary["stream_rss_ratio"] = 1.126
	r.Summary["status_ms"] = 141.6
	r.Summary["calls_per_version"] = 0.0412
	r.Summary["pg_reader_errors"] = 0
	r.Summary["pg_reader_p99_ms"] = 12.345
	r.Summary["open_ratio"] = 1.047
	r.Summary["many_limited_catchup_s"] = 187.4
	r.Summary["merge_fixed_ms"] = 61.4
	got := r.SummaryLine()
	want := "load_ratio=1.04 merge_vs_reload=- merge_vs_raw=- merge_fixed_ms=61 events_per_s=3105 updates_vs_raw=- rss_ratio=- stream_rss_ratio=1.13 file_growth=1.50 publish_vs_copy=- " +
		"many_bootstrap_ratio=- many_events_per_s=- many_updates_vs_raw=- many_vs_raw_batched=- status_ms=142 calls_per_version=0.04 wkb_load=- " +
		"wire_bootstrap_ratio=- updates_vs_raw_batch=- tables_bytes_ratio=- pg_load_ratio=- pg_load_cpu_ratio=- pg_merge_ratio=- pg_merge_vs_update=- pg_reader_p99_ms=12.35 pg_reader_errors=0 pg_reader_lock_ms=- " +
		"open_ratio=1.05 many_limited_catchup_s=187"
	if got != want {
		t.Fatalf("summary:\n got %s\nwant %s", got, want)
	}
	// A --many-history run's keys follow, and only when it set them.
	r.Summary["many_history_events_per_s"] = 281.6
	r.Summary["many_history_bootstrap_ratio"] = 2.514
	if got, tail := r.SummaryLine(), " many_history_bootstrap_ratio=2.51 many_history_events_per_s=282"; got != want+tail {
		t.Fatalf("summary with the history's keys:\n got %s\nwant %s", got, want+tail)
	}
}

// A --many-history run marks every line of its section, takes their
// targets off (DuckDB alone keeps no history) and sets only its own keys,
// leaving the keys of the sections before it as they were.
func TestWithManyHistory_marksItsLinesAndKeys(t *testing.T) {
	r := &run{cfg: Config{ManyHistory: true}, rep: newReport()}
	r.rep.target(Line{What: "load", Ratio: 1.05}, 1.1, true)
	r.rep.Summary["load_ratio"] = 1.05
	var during []string
	err := r.withManyHistory(func() error {
		during = r.eo.History
		r.rep.target(Line{What: "7c. catch-up", Ratio: 280}, 2000, false)
		r.rep.Summary["many_events_per_s"] = 280
		r.rep.Summary["status_ms"] = 70
		return nil
	})
	if err != nil || len(during) != 1 || during[0] != "all" || r.eo.History != nil {
		t.Fatalf("history during the section %v, after %v, err %v; want all, then none", during, r.eo.History, err)
	}
	if l := r.rep.Lines[0]; l.What != "load" || l.Holds() != "holds" {
		t.Fatalf("the line before the section became %+v", l)
	}
	if l := r.rep.Lines[1]; !strings.HasPrefix(l.What, historyLabel) || l.Target != "" || l.Holds() != "" {
		t.Fatalf("the section's line is %+v, want it marked and without a target", l)
	}
	want := map[string]float64{"load_ratio": 1.05, "many_history_events_per_s": 280}
	if len(r.rep.Summary) != len(want) || r.rep.Summary["load_ratio"] != 1.05 || r.rep.Summary["many_history_events_per_s"] != 280 {
		t.Fatalf("summary %v, want %v", r.rep.Summary, want)
	}
}

func TestLine_Holds(t *testing.T) {
	r := newReport()
	r.target(Line{Ratio: 1.2}, 1.1, true)
	r.target(Line{Ratio: 2500}, 2000, false)
	r.add(Line{Ratio: math.NaN()})
	var got []string
	for _, l := range r.Lines {
		got = append(got, l.Target+":"+l.Holds())
	}
	if s, want := strings.Join(got, " "), "≤ 1.10:misses ≥ 2000:holds :"; s != want {
		t.Fatalf("got %q, want %q", s, want)
	}
}

func TestStat(t *testing.T) {
	var s Stat
	for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		s.Add(d)
	}
	if got, want := s.String(), "2.00 s (1.00–3.00)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
