package webhook

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// A seenSet with a file keeps its ids in it, so that a delivery repeated
// after a restart (Ploti's retry, or a captured one replayed) is answered
// as a duplicate and starts nothing. Each id answered 2xx is appended as
// one JSON line; at start the lines within the window are read back, as
// the set would have held them. The file stays bounded as the set is:
// when it holds more than twice the live ids (and a few hundred lines),
// it is written anew with the live ones only. Lines are not synced to
// disk: a line lost with a crash costs one repeated sync, never an event
// (request events are kept by Keep, which syncs them, before the id is
// written here).

// seenLine is one line of a seen file.
type seenLine struct {
	ID string `json:"id"`
	At int64  `json:"at"` // Unix nanoseconds
}

// seenCompactMin is how many lines a seen file may have beyond twice its
// live ids before it is written anew.
const seenCompactMin = 256

// seenLog is the file of a seenSet. It is opened for each line, so that a
// Handler holds no file open between deliveries.
type seenLog struct {
	path  string
	lines int // lines in the file
}

// openSeen loads the ids of the file at path seen within the window
// before now into s, and keeps appending to it. A line that does not read
// (cut short by a crash) is skipped.
func (s *seenSet) openSeen(path string, now time.Time) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("webhook ids seen: %w", err)
	}
	lines, err := s.readSeen(path, now)
	if err != nil {
		return fmt.Errorf("webhook ids seen: read %s: %w", path, err)
	}
	s.log = &seenLog{path: path, lines: lines}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.compactIfBig()
}

// readSeen adds the file's ids to s and counts its lines; no file is
// none.
func (s *seenSet) readSeen(path string, now time.Time) (int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		n++
		var l seenLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.ID == "" {
			continue
		}
		at := time.Unix(0, l.At)
		if now.Sub(at) >= s.window || at.After(now.Add(s.window)) {
			continue
		}
		s.add(l.ID, at)
	}
	return n, sc.Err()
}

// persist writes id, seen at at, to the file (when the set has one).
func (s *seenSet) persist(id string, at time.Time) error {
	if s.log == nil {
		return nil
	}
	line, err := json.Marshal(seenLine{ID: id, At: at.UnixNano()})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(s.log.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = f.Write(append(line, '\n'))
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return fmt.Errorf("webhook ids seen: write %s: %w", s.log.path, err)
	}
	s.log.lines++
	return s.compactIfBig()
}

// compactIfBig writes the file anew when it holds many more lines than
// the set has ids: its lines of ids the set still holds (not expired nor
// pushed out), each once, to a temporary file renamed over it. It reads
// them from the file, not the set: an id the set holds while its delivery
// is still being kept is not written before it is answered.
func (s *seenSet) compactIfBig() error {
	if s.log.lines <= 2*len(s.at)+seenCompactMin {
		return nil
	}
	keep, err := s.liveLines()
	if err != nil {
		return fmt.Errorf("webhook ids seen: read %s: %w", s.log.path, err)
	}
	tmp := s.log.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("webhook ids seen: %w", err)
	}
	w := bufio.NewWriter(f)
	for _, l := range keep {
		w.Write(append(l, '\n'))
	}
	err = errors.Join(w.Flush(), f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, s.log.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("webhook ids seen: rewrite %s: %w", s.log.path, err)
	}
	s.log.lines = len(keep)
	return nil
}

// liveLines are the file's lines whose ids the set holds, the last line
// of each id only, in the file's order.
func (s *seenSet) liveLines() ([][]byte, error) {
	f, err := os.Open(s.log.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines [][]byte
	last := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l seenLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		if _, ok := s.at[l.ID]; !ok {
			continue
		}
		if i, ok := last[l.ID]; ok {
			lines[i] = nil
		}
		last[l.ID] = len(lines)
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	out := lines[:0]
	for _, l := range lines {
		if l != nil {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}
