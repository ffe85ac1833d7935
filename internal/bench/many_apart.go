package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
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
// own, as the engine's catch-up apart runs: both pay a fresh process's
// first touch of the memory the merges fill (page faults, which cost
// 5–13 µs each on the bench's VMs), where DuckDB alone in the bench's
// process may reuse what its allocator kept from the runs before.
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
	settle()
	lines, k, err := r.runChild(ctx, childJob{Mode: "raw-catchup", Path: p, Pages: pages, Threads: r.eo.Threads, MemoryLimit: r.eo.MemoryLimit})
	if err != nil {
		return cost{}, k, err
	}
	for _, line := range lines {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), rawPrefix); ok {
			var wall, cpu int64
			if _, err := fmt.Sscan(v, &wall, &cpu); err != nil {
				return cost{}, k, fmt.Errorf("child raw-catchup: %q: %w", line, err)
			}
			return cost{time.Duration(wall), time.Duration(cpu)}, k, nil
		}
	}
	return cost{}, k, fmt.Errorf("child raw-catchup printed no %s line: %s", rawPrefix, strings.TrimSpace(strings.Join(lines, "\n")))
}
