package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// spoiledPrefix starts the base name of a file served in place of a
// version's own (SpoilFile); the original keeps its name beside it.
const spoiledPrefix = "spoiled-"

// SpoilFile makes a version serve bad content in place of one of its files,
// for bad-input tests: kind is "snapshot" (part is the part's index),
// "changes", "idMap" or "schema". spoil gets the local path of the version's
// own file and returns the bytes to serve instead. The links' bytes and
// sha256 then describe the spoiled bytes, so the damage is in the content,
// not in the transfer (for that, see Inject). Truth keeps giving the
// version's own rows. RestoreFiles undoes it.
//
// Publish reads a version's rows from its snapshot when its table is no
// longer kept: restore a spoiled snapshot before publishing on top of it.
func (e *Emulator) SpoilFile(ctx context.Context, datasetID string, version int, kind string, part int, spoil func(path string) ([]byte, error)) error {
	e.pubMu.Lock()
	defer e.pubMu.Unlock()
	d, v, err := e.findVersion(datasetID, version)
	if err != nil {
		return fmt.Errorf("spoil file: %w", err)
	}
	if v.state == "released" {
		// Truth reads the version's files: work it out from the good ones
		// first (it is cached), so the spoiled file never reaches it.
		if _, err := e.truth(ctx, d, v); err != nil {
			return fmt.Errorf("spoil file: %w", err)
		}
	}
	e.mu.Lock()
	ref, err := fileOf(v, kind, part)
	e.mu.Unlock()
	if err != nil {
		return fmt.Errorf("spoil %s v%d: %w", datasetID, version, err)
	}
	orig := unspoiled(ref.rel)
	b, err := spoil(e.abs(orig))
	if err != nil {
		return fmt.Errorf("spoil %s v%d %s: %w", datasetID, version, kind, err)
	}
	rel := path.Join(path.Dir(orig), spoiledPrefix+path.Base(orig))
	if err := os.WriteFile(e.abs(rel), b, 0o644); err != nil {
		return fmt.Errorf("spoil %s v%d %s: %w", datasetID, version, kind, err)
	}
	f, err := describeFile(rel, e.abs(rel))
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p, _ := fileOf(v, kind, part)
	f.name, f.contentType = p.name, p.contentType
	*p = f
	return nil
}

// SpoilFileQuery is SpoilFile for a Parquet file, spoiled with a DuckDB
// query over the version's own file, which the query reads as the relation
// original: "SELECT * FROM original UNION ALL (SELECT * FROM original LIMIT
// 1)" repeats a record id. The spoiled file has the row groups of the
// emulator's own (Options.RowGroupRows).
func (e *Emulator) SpoilFileQuery(ctx context.Context, datasetID string, version int, kind string, part int, query string) error {
	return e.SpoilFile(ctx, datasetID, version, kind, part, func(src string) ([]byte, error) {
		tmp, err := os.CreateTemp(e.dir, "spoil-*.parquet")
		if err != nil {
			return nil, err
		}
		tmp.Close()
		defer os.Remove(tmp.Name())
		if _, err := e.copyTo(ctx, fmt.Sprintf("WITH original AS (SELECT * FROM read_parquet(%s, hive_partitioning = false)) %s", lit(src), query), filepath.Base(tmp.Name())); err != nil { // in e.dir
			return nil, err
		}
		return os.ReadFile(tmp.Name())
	})
}

// RestoreFiles makes a version serve its own files again after SpoilFile.
func (e *Emulator) RestoreFiles(datasetID string, version int) error {
	e.pubMu.Lock()
	defer e.pubMu.Unlock()
	_, v, err := e.findVersion(datasetID, version)
	if err != nil {
		return fmt.Errorf("restore files: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	refs := []*fileRef{v.changes, v.idMap, &v.schemaFile}
	for i := range v.snapshot {
		refs = append(refs, &v.snapshot[i])
	}
	for _, p := range refs {
		if p == nil || unspoiled(p.rel) == p.rel {
			continue
		}
		rel := unspoiled(p.rel)
		f, err := describeFile(rel, e.abs(rel))
		if err != nil {
			return fmt.Errorf("restore files of %s v%d: %w", datasetID, version, err)
		}
		f.name, f.contentType = p.name, p.contentType
		*p = f
	}
	return nil
}

// fileOf finds one of a version's files; e.mu must be held.
func fileOf(v *version, kind string, part int) (*fileRef, error) {
	switch kind {
	case "snapshot":
		if part >= 0 && part < len(v.snapshot) {
			return &v.snapshot[part], nil
		}
		return nil, fmt.Errorf("%w: no snapshot part %d", ErrNotFound, part)
	case "changes":
		if v.changes != nil {
			return v.changes, nil
		}
	case "idMap":
		if v.idMap != nil {
			return v.idMap, nil
		}
	case "schema":
		return &v.schemaFile, nil
	default:
		return nil, fmt.Errorf("%w: unknown file kind %q", ErrInvalid, kind)
	}
	return nil, fmt.Errorf("%w: the version has no %s file", ErrNotFound, kind)
}

// unspoiled is the version's own file for a spoiled one's rel.
func unspoiled(rel string) string {
	dir, base := path.Split(rel)
	if b, ok := strings.CutPrefix(base, spoiledPrefix); ok {
		return dir + b
	}
	return rel
}

// writeJSONFault writes an API answer spoiled as a body fault says: cut to
// its first half (FaultTruncate), some bytes made NUL so that it does not
// parse (FaultCorrupt), or announced whole and cut off halfway
// (FaultCutOff).
func writeJSONFault(w http.ResponseWriter, status int, v any, f *Fault) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode answer", http.StatusInternalServerError)
		return
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	switch f.Kind {
	case FaultTruncate:
		b = b[:len(b)/2]
	case FaultCorrupt:
		for i := len(b) / 3; i < len(b)/3+16 && i < len(b); i++ {
			b[i] = 0
		}
	case FaultCutOff:
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(status)
		w.Write(b[:len(b)/2])
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// SpoilWatch makes the watch API's changes and rows answers for a dataset
// pass through spoil before they are sent, for a client's bad-input tests
// (a row that does not fit the schema, an id listed twice, a renamed
// record whose old id was never held): spoil gets the endpoint, "changes"
// or "rows", and the answer decoded (objects as map[string]any, arrays as
// []any, numbers as json.Number), and changes it in place. A nil spoil
// stops it. The truth helpers are not affected. It returns ErrNotFound for
// an unknown dataset.
func (e *Emulator) SpoilWatch(datasetID string, spoil func(endpoint string, answer map[string]any)) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.datasets[datasetID] == nil {
		return fmt.Errorf("spoil watch %s: %w", datasetID, ErrNotFound)
	}
	if e.watchSpoil == nil {
		e.watchSpoil = map[string]func(string, map[string]any){}
	}
	if spoil == nil {
		delete(e.watchSpoil, datasetID)
	} else {
		e.watchSpoil[datasetID] = spoil
	}
	return nil
}

// spoilWatch passes a watch answer through the dataset's SpoilWatch, if
// any.
func (e *Emulator) spoilWatch(datasetID, endpoint string, answer []byte) ([]byte, error) {
	e.mu.Lock()
	spoil := e.watchSpoil[datasetID]
	e.mu.Unlock()
	if spoil == nil {
		return answer, nil
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(answer))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("spoil %s answer: %w", endpoint, err)
	}
	spoil(endpoint, m)
	return json.Marshal(m)
}
