package bench

import (
	"context"
	"fmt"
	"math"
	"os"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckdb"
)

// publish measures `--publish` on the largest file (a
// checkpointed read-only copy renamed over the readers' path after each
// sync): the writer's Publish, from its checkpoint to the rename, against
// the plain copy of the closed file and its fsync (copyDB), which is the
// least a copy that survives a crash costs on a filesystem without
// reflinks.
func (r *run) publish(ctx context.Context, b *bigDataset) error {
	want, err := tableRows(ctx, b.engine, b.table)
	if err != nil {
		return err
	}
	var eng, raw Costs
	var bytes int64
	reflink := false
	for i := range r.cfg.Repeat {
		dst, plain := r.path("published"), r.path("copied")
		publishRun := func() error {
			db, err := duckdb.OpenFile(ctx, b.engine, storage.Options{Threads: r.eo.Threads, MemoryLimit: r.eo.MemoryLimit})
			if err != nil {
				return err
			}
			settle()
			stop := startWatch()
			res, err := db.Publish(ctx, dst)
			eng.Add(stop())
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			bytes, reflink = res.Bytes, res.Reflink
			return err
		}
		copyRun := func() error {
			settle()
			stop := startWatch()
			err := copyDB(b.engine, plain)
			raw.Add(stop())
			return err
		}
		if err := inTurns(i, publishRun, copyRun); err != nil {
			return err
		}
		r.logf("publish %s rows (%s), run %d: %s, plain copy and fsync %s", rows(b.n), mib(float64(bytes)), i+1,
			secs(eng.Wall.Runs[i]), secs(raw.Wall.Runs[i]))
		if err := checkRows(ctx, dst, b.table, want); err != nil {
			return err
		}
		os.Chmod(dst, 0o644)
		removeDB(dst)
		removeDB(plain)
	}
	how := "plain copy (no reflinks here)"
	if reflink {
		how = "reflink"
	}
	ratio, cpu := ratios(eng, raw)
	r.rep.add(Line{What: "7. publish (--publish PATH): checkpoint, " + how + ", fsync, read-only check, rename", Size: fmt.Sprintf("%s rows, %s file", rows(b.n), mib(float64(bytes))),
		Engine: eng.String(), Versus: "copy and fsync of the closed file: " + raw.String(), Ratio: ratio, CPURatio: cpu})
	if math.IsNaN(ratio) {
		return nil
	}
	r.rep.Summary["publish_vs_copy"] = ratio
	return nil
}
