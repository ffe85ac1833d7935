package apply

import (
	"context"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// reloadLog is what a reload keeps of the held table, before the swap, to
// log what it changed (marks read it): nil when nothing needs it.
type reloadLog struct {
	digest *storage.Digest
}

// beforeReload digests a dataset's held table before a reload to the
// columns next, when the file has marks (Executor.LogReloads) and the
// dataset holds a version.
func (x *Executor) beforeReload(ctx context.Context, tx *storage.Tx, d *storage.Dataset, next []ploti.Column) (*reloadLog, error) {
	if !x.LogReloads || d.Version == 0 || d.Table == "" {
		return nil, nil
	}
	ok, err := tx.TableExists(ctx, d.Table)
	if err != nil || !ok {
		return nil, err
	}
	dg, err := tx.DigestTable(ctx, d.Table, d.Columns, next)
	if err != nil {
		return nil, err
	}
	return &reloadLog{digest: dg}, nil
}

// afterReload logs, as version's, what the reload changed.
func (x *Executor) afterReload(ctx context.Context, tx *storage.Tx, rl *reloadLog, id, table string, version int, maps []idMapFile) error {
	if rl == nil {
		return nil
	}
	_, err := tx.LogReload(ctx, rl.digest, id, version, table, mapVersions(maps))
	return err
}

func mapVersions(maps []idMapFile) []int {
	var out []int
	for _, m := range maps {
		out = append(out, m.version)
	}
	return out
}
