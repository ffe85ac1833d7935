package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/webhook"
)

// InboxQueue keeps the request events a Daemon receives until a sync
// writes them into the file's _ploti.inbox (the file is open only while a
// sync runs). Each event is one JSON line of <db>.inbox (replica.InboxQueuePath),
// appended and synced to disk before the delivery is answered: an event Ploti was told it got is
// not lost with the process. A sync takes the queue (renamed to
// <db>.inbox.taking), records it, and removes it; a queue taken and not
// recorded (a crash, a failed sync) is taken again first, and the inbox's
// dedupe by event id makes the second recording change nothing. A
// Daemon's syncs set the recorded events aside (<db>.inbox.recorded)
// until a later sync finds the same file (RecordKept, Confirm): a file
// deleted under the Daemon does not take them with it.
type InboxQueue struct {
	mu   sync.Mutex
	path string
	now  func() time.Time
	log  *slog.Logger
	// opened, when set (tests), runs after the queue file is opened for
	// an event and before the event is written to it.
	opened func()
}

// NewInboxQueue is the queue of db, a file's path or a postgres:// URL:
// the Daemon keeps request events in it, and any other sync of db (one
// that runs while the Daemon is down) records them with Record. A nil log
// logs nothing.
func NewInboxQueue(db string, now func() time.Time, log *slog.Logger) *InboxQueue {
	return &InboxQueue{path: replica.InboxQueuePath(db), now: now, log: logs.OrDiscard(log)}
}

// Keep appends a request event (webhook.HandlerOptions.Keep); other events
// are not kept.
//
// Another process (a `sync` of the same file while serve runs) may take
// the queue, renaming it aside, reading and removing it, between this
// process's open and its write: the line would land in a queue already
// read, and be lost after its 2xx. So once written, the line is written
// again to the queue now whenever the file it went to is no longer the
// queue (a line recorded twice is recorded once: the inbox dedupes by
// event id); if the queue keeps moving, the answer is 503 and Ploti
// delivers the event again.
func (q *InboxQueue) Keep(_ context.Context, e webhook.Event) error {
	if !ploti.IsRequestEvent(e.Type) {
		return nil
	}
	line, err := json.Marshal(replica.InboxEvent{ID: e.ID, Type: e.Type, Timestamp: e.Timestamp, Data: e.Data, ReceivedAt: q.now().UTC()})
	if err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(q.path), 0o700); err != nil { // a database's queue: its folder in the cache
		return fmt.Errorf("keep request event %s: %w", e.ID, err)
	}
	for range 3 {
		stayed, err := q.appendLine(line)
		if err != nil {
			return fmt.Errorf("keep request event %s: %w", e.ID, err)
		}
		if stayed {
			return nil
		}
	}
	return fmt.Errorf("keep request event %s: the queue %s was taken by another process while the event was written, three times", e.ID, q.path)
}

// appendLine appends line to the queue and syncs it; stayed reports
// whether the file written is still the queue's (not taken meanwhile).
func (q *InboxQueue) appendLine(line []byte) (stayed bool, err error) {
	f, err := os.OpenFile(q.path, os.O_APPEND|os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false, err
	}
	if q.opened != nil {
		q.opened()
	}
	if cut, err := endsCutShort(f); err != nil {
		f.Close()
		return false, err
	} else if cut {
		// A line cut short (a crash or a full disk while it was written):
		// end it, so that this event's line is not glued to it and
		// skipped with it at take.
		line = append([]byte{'\n'}, line...)
	}
	_, werr := f.Write(append(line, '\n'))
	serr := f.Sync()
	written, sterr := f.Stat()
	// Compared while the file is open, so that its inode is not freed and
	// given to a new queue meanwhile.
	now, nerr := os.Stat(q.path)
	cerr := f.Close()
	if err := errors.Join(werr, serr, sterr, cerr); err != nil {
		return false, err
	}
	return nerr == nil && os.SameFile(written, now), nil
}

// endsCutShort reports whether the queue file ends inside a line.
func endsCutShort(f *os.File) (bool, error) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return false, err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, st.Size()-1); err != nil {
		return false, err
	}
	return last[0] != '\n', nil
}

// take returns the events to record and the file they are in: a queue
// taken before and not recorded, else the queue now (moved aside, so that
// events that come meanwhile start a new one). No events: "".
func (q *InboxQueue) take() (string, []replica.InboxEvent, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	taking := q.path + ".taking"
	if _, err := os.Stat(taking); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(q.path, taking); errors.Is(err, os.ErrNotExist) {
			return "", nil, nil
		} else if err != nil {
			return "", nil, fmt.Errorf("take the inbox queue: %w", err)
		}
	}
	evs, err := readQueue(taking, q.log)
	if err != nil {
		return "", nil, fmt.Errorf("take the inbox queue: %w", err)
	}
	return taking, evs, nil
}

// readQueue reads the events of a queue file, one JSON line each; a line
// that does not read is skipped, with a warning.
func readQueue(path string, log *slog.Logger) ([]replica.InboxEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var evs []replica.InboxEvent
	// Lines as long as the deliveries taken (Webhook.MaxBody): no line
	// length limit, which would leave a large event waiting for good.
	br := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var ev replica.InboxEvent
			if jerr := json.Unmarshal(line, &ev); jerr != nil || ev.ID == "" {
				// A line cut short by a crash while it was written: its
				// delivery was not answered 2xx, and comes again.
				log.Warn("skipping an unreadable line of the inbox queue", slog.String("file", path), slog.Int("line", n))
			} else {
				evs = append(evs, ev)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
	}
	return evs, nil
}

// done sets aside a queue file whose events are recorded: with keep,
// its lines are appended to the recorded file (<queue>.recorded, synced)
// until Confirm; then, or without keep, the file is removed.
func (q *InboxQueue) done(path string, keep bool) {
	if path == "" {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if keep {
		if err := appendFile(q.recordedPath(), path); err != nil {
			q.log.Warn("keep the recorded inbox queue until the next sync; its events are recorded again (once)", logs.Err(err))
			return
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		q.log.Warn("remove the recorded inbox queue; its events are recorded again (once)", logs.Err(err))
	}
}

// Record writes the queue's events into the replica's inbox: a queue
// taken before and not recorded, then the queue now, so that the events
// kept since the first was taken do not wait for another sync. Events
// recorded by a Daemon and set aside (RecordKept) are recorded again
// first (the inbox keeps each once), then forgotten.
func (q *InboxQueue) Record(ctx context.Context, r *replica.Replica) {
	if q.recordAll(ctx, r, false) {
		q.Confirm()
	}
}

// RecordKept is Record for a Daemon, whose file may be deleted or
// replaced under it while it runs (replica.RunFile then stops): the
// events recorded are set aside rather than forgotten, and recorded
// again by every sync until Confirm, which the Daemon calls once a later
// sync of the run found the same file (so that they are in it). Events
// recorded into a file deleted meanwhile are recorded again into the one
// made next, not lost with it.
func (q *InboxQueue) RecordKept(ctx context.Context, r *replica.Replica) {
	q.recordAll(ctx, r, true)
}

// Confirm forgets the events recorded and set aside by RecordKept: the
// file they were recorded in is still the one at the path.
func (q *InboxQueue) Confirm() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := os.Remove(q.recordedPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		q.log.Warn("forget the recorded inbox events; they are recorded again (once)", logs.Err(err))
	}
}

// recordAll records the events set aside, then the queues; false when
// the events set aside could not be recorded.
func (q *InboxQueue) recordAll(ctx context.Context, r *replica.Replica, keep bool) bool {
	ok := q.recordAgain(ctx, r)
	for range 2 {
		if !q.recordOne(ctx, r, keep) {
			break
		}
	}
	return ok
}

// recordAgain records the events set aside (none: true).
func (q *InboxQueue) recordAgain(ctx context.Context, r *replica.Replica) bool {
	q.mu.Lock()
	evs, err := readQueue(q.recordedPath(), q.log)
	q.mu.Unlock()
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err == nil && len(evs) > 0 {
		_, err = r.RecordInbox(ctx, evs)
	}
	if err != nil {
		q.log.Warn("record the request events set aside in _ploti.inbox; the next sync tries again", logs.Err(err))
		return false
	}
	return true
}

// recordOne takes a queue and records it; false when there was none, or
// it could not be read or recorded (it waits for the next sync).
func (q *InboxQueue) recordOne(ctx context.Context, r *replica.Replica, keep bool) bool {
	path, evs, err := q.take()
	if err != nil {
		q.log.Warn("request events wait for the next sync", logs.Err(err))
		return false
	}
	if path == "" {
		return false
	}
	n, err := r.RecordInbox(ctx, evs)
	if err != nil {
		q.log.Warn("record request events in _ploti.inbox; the next sync tries again", logs.Err(err))
		return false
	}
	q.done(path, keep)
	q.log.Info("request events recorded in _ploti.inbox", slog.Int("events", len(evs)), slog.Int("new", n))
	return true
}

// recordedPath is the file of the events recorded and set aside.
func (q *InboxQueue) recordedPath() string { return q.path + ".recorded" }

// appendFile appends the bytes of src to dst (created when missing) and
// syncs dst, ending a last line cut short first.
func appendFile(dst, src string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_APPEND|os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if cut, err := endsCutShort(f); err != nil {
		f.Close()
		return err
	} else if cut {
		b = append([]byte{'\n'}, b...)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	_, werr := f.Write(b)
	return errors.Join(werr, f.Sync(), f.Close())
}
