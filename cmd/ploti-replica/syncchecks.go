package main

// What sync checks with the API before it opens (or creates) the file, so
// that a mistake leaves no file behind and nothing half done: the
// subscription of a new file, that there is something to keep at all, and
// the datasets --history and --id-ref name.

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
)

// preflight asks the API what it can tell before sync opens the file:
// for a new file, that the key, the URL and the subscription are good (a
// wrong one leaves no empty replica file behind); for any file without a
// subscription, that some dataset is watched; and that each dataset
// --history and --id-ref name exists.
func preflight(ctx context.Context, path string, opts replica.Options) error {
	exists, err := replica.FileExists(path)
	if err != nil {
		return err
	}
	refs := namedDatasets(opts)
	if exists && opts.SubscriptionID != "" && len(refs) == 0 {
		return nil // the sync itself asks what there is to ask
	}
	fo := fetch.Options{BaseURL: opts.APIURL, APIKey: opts.APIKey, HTTPClient: opts.HTTPClient, Logger: opts.Logger}
	if opts.FetchOptions != nil {
		opts.FetchOptions(&fo)
	}
	c, err := fetch.New(fo)
	if err != nil {
		return &usageError{err}
	}
	what := "sync " + replica.Name(path)
	if !exists && opts.SubscriptionID != "" {
		if err := checkNewSubscription(ctx, c, path, opts.SubscriptionID); err != nil {
			return explainUnreachable(err, what)
		}
	}
	var kept map[string]string // the file's datasets and their status, when it could be read
	if exists {
		kept = fileDatasets(ctx, path)
	}
	if opts.SubscriptionID == "" {
		if err := checkSomethingToKeep(ctx, c, path, exists, kept); err != nil {
			return explainUnreachable(err, what)
		}
	}
	return checkNamedDatasets(ctx, c, refs, kept)
}

// checkNewSubscription asks Ploti about the subscription a new file is
// to replicate.
func checkNewSubscription(ctx context.Context, c *fetch.Client, path, id string) error {
	_, err := c.Subscription(ctx, id)
	if errors.Is(err, fetch.ErrNotFound) {
		return fmt.Errorf("sync: Ploti does not know subscription %s: check its id with `ploti-replica subscriptions list` "+
			"(it may have been deleted, or belong to another workspace); %s was not created: %w", id, path, err)
	}
	if err != nil {
		return fmt.Errorf("sync: check subscription %s before creating %s: %w", id, path, err)
	}
	return nil
}

// checkSomethingToKeep refuses a sync without a subscription when no
// dataset is watched and the file holds none that a sync would move: it
// would make an empty file, or leave one as it is, and call it caught up.
func checkSomethingToKeep(ctx context.Context, c *fetch.Client, path string, exists bool, kept map[string]string) error {
	ws, err := c.Watches(ctx)
	if err != nil {
		if !exists {
			return fmt.Errorf("sync: list watches before creating %s: %w", path, err)
		}
		return fmt.Errorf("sync: %w", err)
	}
	if len(ws) > 0 {
		return nil
	}
	if exists && (kept == nil || hasLive(kept)) {
		return nil // a watched dataset no longer watched is marked so by the sync
	}
	where := path + " was not created"
	if exists {
		where = path + " holds no dataset and was left as it is"
	}
	return &usageError{fmt.Errorf("sync: nothing to keep: no subscription (set --subscription or PLOTI_SUBSCRIPTION) "+
		"and you watch no dataset (`ploti-replica watch add DATASET` watches one); %s", where)}
}

// hasLive reports whether any dataset of the file is not removed.
func hasLive(kept map[string]string) bool {
	for _, status := range kept {
		if status != storage.StatusRemoved {
			return true
		}
	}
	return false
}

// namedRef is a dataset a sync flag names.
type namedRef struct{ flag, value, dataset string }

// namedDatasets are the datasets --history and --id-ref name (not
// --history all).
func namedDatasets(opts replica.Options) []namedRef {
	var out []namedRef
	for _, id := range opts.History {
		if id != replica.HistoryAll {
			out = append(out, namedRef{"--history", id, id})
		}
	}
	for _, r := range opts.IDReferences {
		out = append(out, namedRef{"--id-ref", r.Table + "." + r.Column + "=" + r.DatasetID, r.DatasetID})
	}
	return out
}

// checkNamedDatasets refuses, before the sync, a dataset --history or
// --id-ref names that neither the file holds nor Ploti knows (as a
// dataset Data Feeds delivers, or one you may watch). One Ploti knows but
// the file does not hold yet passes: this sync may bring it.
func checkNamedDatasets(ctx context.Context, c *fetch.Client, refs []namedRef, kept map[string]string) error {
	asked := map[string]bool{}
	for _, r := range refs {
		if _, ok := kept[r.dataset]; ok {
			continue
		}
		known, seen := asked[r.dataset]
		if !seen {
			var err error
			if known, err = datasetExists(ctx, c, r.dataset); err != nil {
				return err
			}
			asked[r.dataset] = known
		}
		if !known {
			return &usageError{fmt.Errorf("%s %s: Ploti knows no dataset %s; `ploti-replica datasets list` lists those your subscriptions deliver, "+
				"`ploti-replica status` those the file keeps", r.flag, r.value, r.dataset)}
		}
	}
	return nil
}

// fileDatasets are the datasets the file holds, by id, with their status;
// nil when the file cannot be read now (another process holds it, say):
// the sync itself then says what is wrong, or waits.
func fileDatasets(ctx context.Context, path string) map[string]string {
	st := fileStatus(ctx, path)
	if st == nil {
		return nil
	}
	out := make(map[string]string, len(st.Datasets))
	for _, d := range st.Datasets {
		out[d.DatasetID] = d.Status
	}
	return out
}

// fileStatus is the status of an existing file, from what its last writer
// kept beside it, else read without waiting; nil when it cannot be read
// now.
func fileStatus(ctx context.Context, path string) *replica.Status {
	if !replica.IsDatabase(path) {
		if st, ok := replica.StoredStatus(path); ok {
			return st
		}
	}
	rd, err := replica.OpenReader(ctx, path, replica.ReaderOptions{LockTimeout: -1})
	if err != nil {
		return nil
	}
	defer rd.Close()
	st, err := rd.Status(ctx)
	if err != nil {
		return nil
	}
	return st
}

// geometryNotice says on stderr, before the sync opens the file, that
// --geometry converts an existing file's tables: a rewrite of every table
// with a geometry column, which takes time on a large file and changes
// what its readers see.
func geometryNotice(ctx context.Context, w io.Writer, path, want string) {
	if want == "" {
		return
	}
	if exists, err := replica.FileExists(path); err != nil || !exists {
		return
	}
	st := fileStatus(ctx, path)
	if st == nil || st.Geometry == "" || st.Geometry == want {
		return
	}
	fmt.Fprintf(w, "ploti-replica: %s stores geometry as %s: --geometry %s converts the geometry columns of its %d table(s) now, "+
		"in one transaction, and the file keeps %s from now on\n", replica.Name(path), st.Geometry, want, len(st.Datasets), want)
}
