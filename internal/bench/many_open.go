package bench

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// manyOpenRuns is how many times each open of the statewide file is timed.
const manyOpenRuns = 5

// manyOpen measures the open of the statewide file, which grows with its
// catalog (DuckDB reads every table's entry), as a sync opens it
// (replica.Open, for writing) and as `status` opens it when no status is
// kept beside it (replica.OpenReader, read-only), against DuckDB alone's
// open of its own file of the same tables: each in turn, the order
// turning every run, up to the first statement's answer.
func (r *run) manyOpen(ctx context.Context, f *manyFixture) error {
	var writer, reader, raw Costs
	steps := []func() error{
		func() error {
			c, err := r.timeOpen(func() (func() error, error) {
				rep, err := replica.Open(ctx, f.engine, replica.Options{APIURL: f.em.URL(), APIKey: f.em.APIKey(), SubscriptionID: f.sub,
					Threads: r.eo.Threads, MemoryLimit: r.eo.MemoryLimit, NoCreate: true})
				if err != nil {
					return nil, err
				}
				return rep.Close, rep.DB().PingContext(ctx)
			})
			writer.Add(c)
			return err
		},
		func() error {
			c, err := r.timeOpen(func() (func() error, error) {
				rd, err := replica.OpenReader(ctx, f.engine, replica.ReaderOptions{Threads: r.eo.Threads})
				if err != nil {
					return nil, err
				}
				return rd.Close, rd.DB().PingContext(ctx)
			})
			reader.Add(c)
			return err
		},
		func() error {
			c, err := r.timeOpen(func() (func() error, error) {
				db, err := duckread.OpenPlain(ctx, f.raw, storage.Options{Threads: r.eo.Threads, MemoryLimit: r.eo.MemoryLimit})
				if err != nil {
					return nil, err
				}
				return db.Close, nil
			})
			raw.Add(c)
			return err
		},
	}
	for i := range manyOpenRuns {
		turn := append(slices.Clone(steps[i%len(steps):]), steps[:i%len(steps)]...)
		for _, s := range turn {
			if err := s(); err != nil {
				return err
			}
		}
	}
	r.reportManyOpen(f, writer, reader, raw)
	return nil
}

// timeOpen times open, which opens a file and answers how to close it;
// the close is not timed.
func (r *run) timeOpen(open func() (func() error, error)) (cost, error) {
	settle()
	stop := startWatch()
	closeFn, err := open()
	c := stop()
	if closeFn != nil {
		if cerr := closeFn(); err == nil {
			err = cerr
		}
	}
	return c, err
}

// reportManyOpen adds the open's lines; open_ratio is the slower of the
// two opens against DuckDB alone's (their target, each).
func (r *run) reportManyOpen(f *manyFixture, writer, reader, raw Costs) {
	size := fmt.Sprintf("%d tables, %s rows", len(f.ids), rows(f.rows))
	wr, wcpu := ratios(writer, raw)
	rr, rcpu := ratios(reader, raw)
	versus := "DuckDB alone, its file of the same tables: " + raw.String()
	r.rep.target(Line{What: "7b. open of the statewide file for reading, as `status` opens it with no status kept (replica.OpenReader)", Size: size,
		Engine: reader.String(), Versus: versus, Ratio: rr, CPURatio: rcpu}, 1.2, true)
	r.rep.target(Line{What: "7b. open of the statewide file for writing, as a sync opens it (replica.Open)", Size: size,
		Engine: writer.String(), Versus: versus, Ratio: wr, CPURatio: wcpu}, 1.2, true)
	r.rep.Summary["open_ratio"] = math.Max(wr, rr)
	r.logf("many open: for writing %s, for reading %s, DuckDB alone %s", writer.Wall.String(), reader.Wall.String(), raw.Wall.String())
}
