package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// rawPrefix starts the line a "raw-catchup" child prints of its merges:
// their wall and CPU nanoseconds, the file's open and close included.
const rawPrefix = "raw_wall_cpu="

// rawCatchUpChild is a "raw-catchup" child's job: DuckDB alone applies the
// log's changes files to job.Path a transaction a page, as rawCatchUp does
// in the bench's process.
func rawCatchUpChild(ctx context.Context, w io.Writer, job childJob, eo engineOpts) error {
	b, err := os.ReadFile(job.Pages)
	if err != nil {
		return err
	}
	var pages [][][2]string
	if err := json.Unmarshal(b, &pages); err != nil {
		return fmt.Errorf("%s: %w", job.Pages, err)
	}
	c, err := rawMergePages(ctx, job.Path, pages, aPage, eo)
	if err == nil {
		fmt.Fprintf(w, "%s%d %d\n", rawPrefix, c.Wall, c.CPU)
	}
	return err
}

// rawCatchUpApart is rawCatchUp's a transaction a page in a process of its
// own, as the engine's catch-up apart runs, so that the two sides of the
// ratio start alike: a fresh process, its address space and DuckDB's
// allocator new, the file copied and the disk settled (by the child). The bench's
// process has grown its address space over the runs before (and holds
// the emulator's); what that changes for the catch-up's page faults is
// measured, not assumed: both sides' kernel time and faults are printed.
func (r *run) rawCatchUpApart(ctx context.Context, f *manyFixture, l *manyLogFixture) (cost, kernel, error) {
	p := r.path("many-log-raw-apart")
	defer removeDB(p)
	if err := copyDB(f.raw, p); err != nil {
		return cost{}, kernel{}, err
	}
	pages := p + ".pages.json"
	defer os.Remove(pages)
	b, err := json.Marshal(l.pages)
	if err == nil {
		err = os.WriteFile(pages, b, 0o600)
	}
	if err != nil {
		return cost{}, kernel{}, err
	}
	// No settle here: the child's timedPlain settles before it times.
	lines, k, err := r.runChild(ctx, childJob{Mode: "raw-catchup", Path: p, Pages: pages, Threads: r.eo.Threads, MemoryLimit: r.eo.MemoryLimit})
	if err != nil {
		return cost{}, k, err
	}
	var wall, cpu int64
	if err := scanChildLine(lines, rawPrefix, &wall, &cpu); err != nil {
		return cost{}, k, fmt.Errorf("child raw-catchup: %w", err)
	}
	return cost{time.Duration(wall), time.Duration(cpu)}, k, nil
}
