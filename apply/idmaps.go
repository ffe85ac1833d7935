package apply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// idMapFile is a version's downloaded id map.
type idMapFile struct {
	version int
	paths   []string
}

// skippedIDMaps finds the id maps of versions a reload jumps over: between
// the held version and v, following previousVersion back, every
// record_ids_changed version's map, oldest first. Only when user columns
// reference the dataset (IDRefs): they must follow each replacement, or
// they would keep ids that no longer exist; or when the reload's changes
// are logged (LogReloads) or kept in a history, which follow each record
// from its id before.
func (x *Executor) skippedIDMaps(ctx context.Context, d *storage.Dataset, v *ploti.Version) ([]idMapFile, error) {
	refs := x.LogReloads || x.keeps(d.ID) // a reload's log and a history follow the ids it replaced
	for _, r := range x.IDRefs {
		refs = refs || r.DatasetID == d.ID
	}
	if !refs || d.Version == 0 {
		return nil, nil
	}
	var out []idMapFile
	start := v.PreviousVersion
	if start == nil && v.ResyncReason == nil && v.Files.IDMap == nil && v.Version > d.Version {
		// A manifest's version comes without its history: follow back
		// from the version itself, whose own map the manifest leaves out.
		start = &v.Version
	}
	for prev := start; prev != nil && *prev > d.Version; {
		pv, err := x.Source.Version(ctx, d.ID, *prev, "")
		if errors.Is(err, ErrExpired) {
			x.pastRetention(d, *prev, err)
			break
		}
		if err != nil {
			return nil, fmt.Errorf("follow version %d back for its id map: %w", *prev, notGone(err))
		}
		if pv.Files.IDMap != nil && pv.ResyncReason != nil && *pv.ResyncReason == ploti.ReasonRecordIDsChanged {
			paths, err := x.Source.Download(ctx, pv, "idMap")
			if err != nil {
				return nil, err
			}
			out = append([]idMapFile{{pv.Version, paths}}, out...)
		}
		prev = pv.PreviousVersion
	}
	return out, nil
}

// pastRetention says that a reload cannot follow ids back past version v
// (410 expired: after a 410 on the log, the versions the file skipped may
// be older than retention) and goes on without the older maps: the
// reload itself does not need them, and failing the dataset would fail
// every repair after it. A record whose id was replaced there is then
// logged, kept in the history and left in --id-ref columns as its old id
// removed and its new one added (decision 46).
func (x *Executor) pastRetention(d *storage.Dataset, v int, err error) {
	x.log().Warn("a version between the one held and the one loaded is past retention: ids it replaced are not followed (the history and the change log see them removed and added; --id-ref columns keep the old ids)",
		slog.String("dataset", d.ID), slog.Int("version", v), slog.Int("held", d.Version), logs.Err(err))
}
