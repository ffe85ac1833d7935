package fetch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
)

// maxRowsRestarts bounds how often SpoolRows starts a read over after its
// cursor expired or its pages came from different versions.
const maxRowsRestarts = 3

// RowSet is a read of rows spooled to a file: NDJSON, one row object a
// line, exactly as the API sent it (compacted). Every row is of Version.
type RowSet struct {
	DatasetID string
	// Version is the one version every page of the read had; nil before
	// the dataset's first version.
	Version *int
	// Columns are the first page's columns: the dataset's columns at Version.
	Columns []ploti.Column
	// Path is the NDJSON file in the spool dir; "" when no row came.
	Path string
	// Rows and Pages count what was read.
	Rows, Pages int64
}

// SpoolRows reads a dataset's rows into SpoolDir/name as NDJSON: the whole
// dataset when ids is nil, else the rows of those ids that exist now, read
// MaxRowIDs ids at a time, each read paged with the same ids (docs/wire.md
// section 9, reading 3). It knows nothing of what reads the file: the rows
// go to it in bulk, one line each.
//
// Every page must be of one version: a read that pages stays on its first
// page's version at the API, and an expired cursor (410) or reads of ids
// that came back at different versions start the whole read over, at most
// maxRowsRestarts times (then ErrRowsMoved). On failure no file is left.
func (c *Client) SpoolRows(ctx context.Context, datasetID string, ids []string, name string) (*RowSet, error) {
	op := "spool rows " + datasetID
	if err := c.spoolReady(name); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var chunks [][]string
	if ids == nil {
		chunks = [][]string{nil}
	} else {
		ids = slices.Compact(slices.Sorted(slices.Values(ids)))
		for ch := range slices.Chunk(ids, MaxRowIDs) {
			chunks = append(chunks, ch)
		}
	}
	for attempt := 0; ; attempt++ {
		rs, err := c.spoolRowsOnce(ctx, datasetID, chunks, name)
		if err == nil {
			return rs, nil
		}
		restart := errors.Is(err, ErrExpired) || errors.Is(err, errMoved)
		if !restart || ctx.Err() != nil {
			return nil, err
		}
		if attempt >= maxRowsRestarts {
			return nil, fmt.Errorf("%s: %w after %d reads: %w", op, ErrRowsMoved, attempt+1, err)
		}
		c.log.Info("read the rows again from the first page",
			logs.Err(err), slog.String(logOp, op), slog.Int(logAttempt, attempt+1))
	}
}

// errMoved marks a page of another version than the read's first page.
var errMoved = errors.New("page of another version")

// spoolRowsOnce reads every chunk of ids (one nil chunk: the whole
// dataset) to the end of its pages into name.
func (c *Client) spoolRowsOnce(ctx context.Context, datasetID string, chunks [][]string, name string) (*RowSet, error) {
	op := "spool rows " + datasetID
	w, err := c.newSpoolFile(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer w.abort()
	rs := &RowSet{DatasetID: datasetID}
	first := true
	for _, ids := range chunks {
		cursor := ""
		for {
			p, n, err := c.spoolRowsPage(ctx, datasetID, cursor, MaxRowsLimit, ids, w)
			if err != nil {
				return nil, err
			}
			rs.Pages++
			rs.Rows += n
			if first {
				rs.Version, rs.Columns, first = p.Version, p.Columns, false
			} else if !sameVersion(rs.Version, p.Version) {
				return nil, fmt.Errorf("%s: %w: v%s, then v%s", op, errMoved, versionText(rs.Version), versionText(p.Version))
			}
			next, err := followCursor(op, "/v1/datasets/"+datasetID+"/rows", p.NextCursor, cursor)
			if err != nil {
				return nil, err
			}
			if next == "" {
				break
			}
			cursor = next
		}
	}
	if rs.Rows == 0 {
		return rs, nil // abort removes the empty file
	}
	if rs.Path, err = w.commit(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return rs, nil
}

// followCursor is the cursor of the page after one read with cursor
// (next, its nextCursor): "" at the end. A page that gives its own cursor
// back is malformed: following it would read the same page forever.
func followCursor(op, path string, next *string, cursor string) (string, error) {
	if next == nil || *next == "" {
		return "", nil
	}
	if *next == cursor {
		return "", &APIError{Op: op, Method: "GET", Path: path, Status: 200, Message: "page gave its own cursor back", Err: ErrMalformed}
	}
	return *next, nil
}

func sameVersion(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func versionText(v *int) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}

// ChangesSpool is every page of a version's changes, its rows moved to a
// file: Changes keep each change's kind and ids, with RowInFile set where
// a row came; Path holds those rows as NDJSON, in the order of Changes.
type ChangesSpool struct {
	ploti.ChangesPage
	// Path is the NDJSON file of the rows given; "" when none came.
	Path string
	// Rows is how many rows Path holds.
	Rows int64
	// Pages is how many pages were read.
	Pages int64
}

// SpoolChanges reads every page of a version's changes into SpoolDir/name
// (the rows) and memory (the kinds and ids). The pages must agree on the
// version's changeLog and previousVersion. A version past retention
// answers ErrExpired. On failure no file is left.
func (c *Client) SpoolChanges(ctx context.Context, datasetID string, version int, name string) (*ChangesSpool, error) {
	op := fmt.Sprintf("spool changes %s v%d", datasetID, version)
	if err := c.spoolReady(name); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	w, err := c.newSpoolFile(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer w.abort()
	var cs ChangesSpool
	cursor := ""
	for {
		p, err := c.Changes(ctx, datasetID, version, cursor, MaxRowsLimit)
		if err != nil {
			return nil, err
		}
		if cs.Pages == 0 {
			cs.ChangesPage = *p
			cs.Changes = nil
		} else if p.ChangeLog != cs.ChangeLog || !sameVersion(p.PreviousVersion, cs.PreviousVersion) {
			return nil, &APIError{Op: op, Method: "GET", Path: "/v1/datasets/" + datasetID + "/changes", Status: 200,
				Message: "pages disagree on changeLog or previousVersion", Err: ErrMalformed}
		}
		cs.Pages++
		for _, ch := range p.Changes {
			if ch.HasRow() {
				if _, err := w.writeRows([]json.RawMessage{ch.Row}); err != nil {
					return nil, fmt.Errorf("%s: %s %s: %w", op, ch.Change, ch.RecordID, err)
				}
				cs.Rows++
				ch.Row, ch.RowInFile = nil, true
			} else {
				ch.Row = nil
			}
			cs.Changes = append(cs.Changes, ch)
		}
		next, err := followCursor(op, "/v1/datasets/"+datasetID+"/changes", p.NextCursor, cursor)
		if err != nil {
			return nil, err
		}
		if next == "" {
			break
		}
		cursor = next
	}
	cs.NextCursor = nil
	if cs.Rows > 0 {
		if cs.Path, err = w.commit(); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	return &cs, nil
}

// spoolReady checks a spool file name and makes the spool dir.
func (c *Client) spoolReady(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if c.spool == "" {
		return errors.New("no spool dir in options")
	}
	return os.MkdirAll(c.spool, 0o700)
}

// spoolFile writes NDJSON to name.part in the spool dir; commit renames it
// to name, abort (after commit: nothing) removes it.
type spoolFile struct {
	final, part string
	f           *os.File
	w           *bufio.Writer
	done        bool
}

func (c *Client) newSpoolFile(name string) (*spoolFile, error) {
	final := filepath.Join(c.spool, name)
	f, err := os.OpenFile(final+partSuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	return &spoolFile{final: final, part: final + partSuffix, f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// writeRows writes each row on a line of its own. A row must be a JSON
// object (ErrMalformed otherwise); one that spans lines is compacted.
func (s *spoolFile) writeRows(rows []json.RawMessage) (int64, error) {
	var n int64
	var buf bytes.Buffer
	for i, r := range rows {
		r = bytes.TrimSpace(r)
		if len(r) == 0 || r[0] != '{' {
			return n, fmt.Errorf("%w: row %d is not a JSON object", ErrMalformed, i)
		}
		if bytes.ContainsAny(r, "\n\r") {
			buf.Reset()
			if err := json.Compact(&buf, r); err != nil {
				return n, fmt.Errorf("%w: row %d: %w", ErrMalformed, i, err)
			}
			r = buf.Bytes()
		}
		if _, err := s.w.Write(r); err != nil {
			return n, err
		}
		if err := s.w.WriteByte('\n'); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (s *spoolFile) commit() (string, error) {
	if err := s.w.Flush(); err != nil {
		return "", err
	}
	if err := s.f.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(s.part, s.final); err != nil {
		return "", err
	}
	s.done = true
	return s.final, nil
}

func (s *spoolFile) abort() {
	if s.done {
		return
	}
	s.f.Close()
	os.Remove(s.part)
}
