package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
)

// Published says where Publish put the file's copy and what it took. Its
// JSON follows the CLI's convention (durationSeconds).
type Published struct {
	Path     string        `json:"path"`
	Bytes    int64         `json:"bytes"`
	Reflink  bool          `json:"reflink"` // the copy shares the file's blocks; false: its bytes were copied
	Duration time.Duration `json:"-"`
}

// MarshalJSON writes Duration as durationSeconds.
func (p Published) MarshalJSON() ([]byte, error) {
	type plain Published
	return json.Marshal(struct {
		plain
		DurationSeconds float64 `json:"durationSeconds"`
	}{plain(p), p.Duration.Seconds()})
}

// Publish writes a checkpointed, read-only copy of the file to dst,
// renamed over dst atomically: a process that opens dst reads the whole
// state of one sync and never waits for the writer's lock. It is a reflink
// where the filesystem has them (Btrfs, XFS), a plain copy otherwise. A
// reader that holds dst open keeps reading the copy it opened until it
// opens dst again. Nothing may write through DB() meanwhile; Sync calls it
// itself when Options.Publish is set.
func (r *Replica) Publish(ctx context.Context, dst string) (Published, error) {
	p, err := storage.Can[storage.Publisher](r.db.Engine(), "a published copy is")
	if err != nil {
		return Published{}, fmt.Errorf("publish %s: %w", r.db.Path(), err)
	}
	res, err := p.Publish(ctx, dst)
	return Published{Path: res.Path, Bytes: res.Bytes, Reflink: res.Reflink, Duration: res.Duration}, err
}
