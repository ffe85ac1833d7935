package apply

import (
	"context"
	"log/slog"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// Stream is a snapshot file still downloading, its footer on disk, that a
// load reads as it arrives (storage.StreamLoader); Close stops it and
// removes the file.
type Stream interface {
	storage.GrowingFile
	Close()
}

// Streamer is a Source that can hand over a version's snapshot before its
// download ends (a load that waited for the whole file cost the
// download plus the load). Stream returns nil and no error when the
// version's snapshot is not one to stream (several parts, too small, no
// size given); an error means the link would not stream it (its server
// serves no ranges, a fault on the way), and the load downloads it whole.
type Streamer interface {
	Stream(ctx context.Context, v *ploti.Version) (Stream, error)
}

// stream starts a prepared load's snapshot as a Stream when the Source
// and the engine both can; it reports whether it did.
func (x *Executor) stream(ctx context.Context, p *Prepared) bool {
	src, ok := x.Source.(Streamer)
	if !ok || !storage.TxCan[storage.StreamLoader](x.DB) {
		return false
	}
	s, err := src.Stream(ctx, p.Version)
	if err != nil {
		x.log().Debug("snapshot not streamed: downloading it whole",
			slog.String("dataset", p.Version.DatasetID), slog.Int("version", p.Version.Version), logs.Err(err))
		return false
	}
	if s == nil {
		return false
	}
	p.stream = s
	for _, f := range p.Version.Files.Snapshot {
		if f.Bytes != nil {
			p.Bytes += *f.Bytes
		}
	}
	return true
}

// whole turns a prepared load's stream, if any, into a whole downloaded
// file: for the loads that read the snapshot more than once (a shared
// transaction, a diff with the table it replaces). It waits for the
// stream's end, and downloads the file again when the stream failed.
func (x *Executor) whole(ctx context.Context, p *Prepared) error {
	if p.stream == nil {
		return nil
	}
	s := p.stream
	if err := s.Done(ctx); err == nil {
		p.stream, p.paths = nil, []string{s.Path()}
		return nil
	}
	s.Close()
	p.stream = nil
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var err error
	p.paths, err = x.Source.Download(ctx, p.Version, "snapshot")
	return err
}

// closeStream stops a prepared load's stream and removes its file.
func (x *Executor) closeStream(p *Prepared) {
	if p.stream != nil {
		p.stream.Close()
		p.stream = nil
	}
}
