package replica

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/storage"
)

// errWaitInTransaction is the read ahead's refusal of a long wait: it
// runs inside a page's transaction, which must not stay open (and keep the
// file) across a Retry-After; the walk reads the page itself after the
// commit, where the wait may give the file up.
var errWaitInTransaction = errors.New("a long wait inside a page's transaction: the walk reads the page after its commit")

// refuseLongWait is the read ahead's long-wait hook.
func refuseLongWait(context.Context, time.Duration) (func(context.Context) error, error) {
	return nil, errWaitInTransaction
}

// waitFree marks ctx for an API call the sync makes with nothing of the
// file in use (no transaction open, nothing else running: the walk's own
// events reads, the manifest's): with Options.ReleaseWhileWaiting, a long
// wait between its tries (a Retry-After, a backoff) gives the file up
// meanwhile, for other processes, and takes it back after.
func (r *Replica) waitFree(ctx context.Context) context.Context {
	if !r.opts.ReleaseWhileWaiting {
		return ctx
	}
	return fetch.WithLongWait(ctx, r.releaseWhileWaiting)
}

// releaseWhileWaiting is waitFree's hook: it releases the file when the
// engine can (a DuckDB file with no connection in use) and returns how to
// take it back; otherwise the wait holds the file, as without the option.
func (r *Replica) releaseWhileWaiting(ctx context.Context, d time.Duration) (func(context.Context) error, error) {
	rel, ok := r.db.Engine().(storage.Releaser)
	if !ok {
		return nil, nil
	}
	resume, err := rel.Release(ctx)
	if err != nil || resume == nil {
		return nil, err
	}
	r.log.Info("waiting on Ploti; the file is free for other processes meanwhile",
		slog.String("db", Name(r.db.Path())), logs.Ms("wait_ms", d))
	return func(ctx context.Context) error {
		if err := resume(ctx); err != nil {
			return err
		}
		r.log.Debug("took the file back after the wait", slog.String("db", Name(r.db.Path())))
		return nil
	}, nil
}
