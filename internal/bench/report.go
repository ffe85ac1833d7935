package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Line is one row of the results table.
type Line struct {
	What   string // what was measured
	Size   string // its size (rows, events, files)
	Engine string // ploti-replica's figure: median (min–max)
	Versus string // what it is compared with, and that figure
	Ratio  float64
	// CPURatio is the same ratio of CPU times (NaN or 0 when not measured):
	// on a machine shared with other work it moves less than wall time.
	CPURatio float64
	Target   string // e.g. "≤ 1.10"; empty when the line has none
	// Lower tells whether a lower ratio is the better one (a time, a size);
	// false for a rate.
	Lower bool
	limit float64
}

// Holds says whether the line meets its target ("" when it has none).
func (l Line) Holds() string {
	if l.Target == "" || math.IsNaN(l.Ratio) {
		return ""
	}
	if l.Lower && l.Ratio <= l.limit || !l.Lower && l.Ratio >= l.limit {
		return "holds"
	}
	return "misses"
}

// Summary keys, in the order the summary line prints them.
var summaryKeys = []string{"load_ratio", "merge_vs_reload", "merge_vs_raw", "merge_fixed_ms", "events_per_s", "updates_vs_raw", "rss_ratio", "stream_rss_ratio", "file_growth",
	"publish_vs_copy", "many_bootstrap_ratio", "many_events_per_s", "many_updates_vs_raw", "many_vs_raw_batched", "status_ms", "calls_per_version", "wkb_load",
	"wire_bootstrap_ratio", "updates_vs_raw_batch", "tables_bytes_ratio",
	"pg_load_ratio", "pg_load_cpu_ratio", "pg_merge_ratio", "pg_merge_vs_update", "pg_reader_p99_ms", "pg_reader_errors", "pg_reader_lock_ms",
	"open_ratio", "many_limited_catchup_s"}

// optionalKeys follow summaryKeys only when the run measured them: those
// of a run that asks for them by a flag (--many-history).
var optionalKeys = []string{"many_history_bootstrap_ratio", "many_history_events_per_s"}

// Report is what a run measured.
type Report struct {
	Lines   []Line
	Summary map[string]float64
	Notes   []string
}

func newReport() *Report { return &Report{Summary: map[string]float64{}} }

func (r *Report) add(l Line) { r.Lines = append(r.Lines, l) }

// target adds a line with a ratio and its target: at most limit when
// lower is true, at least limit otherwise.
func (r *Report) target(l Line, limit float64, lower bool) {
	l.limit, l.Lower = limit, lower
	op := "≥"
	if lower {
		op = "≤"
	}
	l.Target = fmt.Sprintf("%s %s", op, trim(limit))
	r.add(l)
}

func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func ratioText(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
		return ""
	}
	return trim(f)
}

func trim(f float64) string {
	s := fmt.Sprintf("%.2f", f)
	if f >= 100 {
		s = fmt.Sprintf("%.0f", f)
	}
	return s
}

// WriteTable writes the results as a Markdown table, then the notes.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintln(w, "| measure | size | ploti-replica | compared with | ratio | cpu ratio | target | |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, l := range r.Lines {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", l.What, l.Size, l.Engine, l.Versus, ratioText(l.Ratio), ratioText(l.CPURatio),
			l.Target, l.Holds())
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range r.Notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
}

// SummaryLine is the one line the issue asks for, keys in a fixed order;
// a key the run did not measure reads "-".
func (r *Report) SummaryLine() string {
	parts := make([]string, 0, len(summaryKeys)+len(optionalKeys))
	for _, k := range summaryKeys {
		parts = append(parts, r.summaryPart(k))
	}
	for _, k := range optionalKeys {
		if _, ok := r.Summary[k]; ok {
			parts = append(parts, r.summaryPart(k))
		}
	}
	return strings.Join(parts, " ")
}

// summaryPart is one key of the summary line: a count or a rate whole,
// a ratio to two decimals.
func (r *Report) summaryPart(k string) string {
	v, ok := r.Summary[k]
	switch {
	case !ok || math.IsNaN(v):
		return k + "=-"
	case strings.HasSuffix(k, "events_per_s") || k == "status_ms" || k == "pg_reader_errors" || k == "many_limited_catchup_s" || k == "merge_fixed_ms":
		return fmt.Sprintf("%s=%.0f", k, v)
	}
	return fmt.Sprintf("%s=%.2f", k, v)
}
