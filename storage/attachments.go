package storage

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Attachment is a file Ploti holds with a dataset's version, as kept in
// _ploti.attachments: inline (Content) or as a file (Path, relative to
// the replica file's folder).
type Attachment struct {
	DatasetID   string
	Version     int
	Name        string
	ContentType string
	Bytes       int64
	SHA256      string
	// Content is the file when kept inline (read only when asked for).
	Content []byte
	// Path is where the file is kept when not inline.
	Path      string
	FetchedAt time.Time
}

// Inline reports whether the attachment is kept in the table.
func (a Attachment) Inline() bool { return a.Path == "" }

// AttachmentSync is the version whose attachments a dataset's rows are,
// and why the last try to keep a later one failed, if it did.
type AttachmentSync struct {
	DatasetID string
	Version   int
	Error     string
}

// Attachments lists the attachments kept, of one dataset or ("") all,
// by dataset and name; content reads the inline files too.
func (db *DB) Attachments(ctx context.Context, datasetID string, content bool) ([]Attachment, error) {
	col := "NULL::BYTEA" // BYTEA: DuckDB's BLOB, and PostgreSQL's name for it
	if content {
		col = "content"
	}
	q := "SELECT dataset_id, version, name, coalesce(content_type, ''), bytes, sha256, " + col + ", coalesce(path, ''), fetched_at FROM _ploti.attachments"
	var args []any
	if datasetID != "" {
		q += " WHERE dataset_id = ?"
		args = append(args, datasetID)
	}
	rows, err := db.sql.QueryContext(ctx, q+" ORDER BY dataset_id, name", args...)
	if err != nil {
		return nil, fmt.Errorf("list attachments: %w", err)
	}
	defer rows.Close()
	var out []Attachment
	for rows.Next() {
		var a Attachment
		if err := rows.Scan(&a.DatasetID, &a.Version, &a.Name, &a.ContentType, &a.Bytes, &a.SHA256, &a.Content, &a.Path, &a.FetchedAt); err != nil {
			return nil, fmt.Errorf("list attachments: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AttachmentSyncs reads, by dataset, the version whose attachments are kept.
func (db *DB) AttachmentSyncs(ctx context.Context) (map[string]AttachmentSync, error) {
	rows, err := db.sql.QueryContext(ctx, "SELECT dataset_id, version, coalesce(error, '') FROM _ploti.attachment_syncs")
	if err != nil {
		return nil, fmt.Errorf("read attachment syncs: %w", err)
	}
	defer rows.Close()
	out := map[string]AttachmentSync{}
	for rows.Next() {
		var s AttachmentSync
		if err := rows.Scan(&s.DatasetID, &s.Version, &s.Error); err != nil {
			return nil, fmt.Errorf("read attachment syncs: %w", err)
		}
		out[s.DatasetID] = s
	}
	return out, rows.Err()
}

// AttachmentsOf reads the attachments kept for the given datasets, by
// dataset, with one query (a query a dataset cost a bootstrap
// of 2,000 datasets seconds); content reads the inline files too.
func (db *DB) AttachmentsOf(ctx context.Context, ids []string, content bool) (map[string][]Attachment, error) {
	out := map[string][]Attachment{}
	if len(ids) == 0 {
		return out, nil
	}
	col := "NULL::BYTEA"
	if content {
		col = "content"
	}
	rows, err := db.sql.QueryContext(ctx, "SELECT dataset_id, version, name, coalesce(content_type, ''), bytes, sha256, "+col+
		", coalesce(path, ''), fetched_at FROM _ploti.attachments WHERE dataset_id IN ("+strings.Join(quoteAll(ids), ", ")+") ORDER BY dataset_id, name")
	if err != nil {
		return nil, fmt.Errorf("list attachments: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a Attachment
		if err := rows.Scan(&a.DatasetID, &a.Version, &a.Name, &a.ContentType, &a.Bytes, &a.SHA256, &a.Content, &a.Path, &a.FetchedAt); err != nil {
			return nil, fmt.Errorf("list attachments: %w", err)
		}
		out[a.DatasetID] = append(out[a.DatasetID], a)
	}
	return out, rows.Err()
}

// AttachmentSet is what keeping one dataset's attachments came to: the
// attachments of Version (List), or why they could not be kept (Err).
type AttachmentSet struct {
	DatasetID string
	Version   int
	List      []Attachment
	Err       string
}

// PutAttachmentSets writes sets: for each, the attachments of its version
// (replacing the dataset's), or the error that kept them from being kept
// (with no List, the rows kept stay; with one, the List is kept as far as
// it went and the error recorded), with four statements for all of them.
func (tx *Tx) PutAttachmentSets(ctx context.Context, sets []AttachmentSet) error {
	if len(sets) == 0 {
		return nil
	}
	if parts := tx.attachmentParts(sets); len(parts) > 1 {
		return tx.putAttachmentParts(ctx, parts)
	}
	var kept, all, rows []string
	var args []any
	for _, s := range sets {
		all = append(all, s.DatasetID)
		if s.Err != "" && s.List == nil {
			continue // nothing kept: the rows kept before stay
		}
		kept = append(kept, s.DatasetID)
		for _, a := range s.List {
			var content, path any
			if a.Path != "" {
				path = a.Path
			} else {
				content = nonNilBytes(a.Content)
			}
			at, v := a.FetchedAt, a.Version
			if at.IsZero() {
				at = tx.Now
			}
			if v == 0 {
				v = s.Version
			}
			rows = append(rows, "(?::VARCHAR, ?::INTEGER, ?::VARCHAR, ?::VARCHAR, ?::BIGINT, ?::VARCHAR, ?::BYTEA, ?::VARCHAR, ?::TIMESTAMPTZ)")
			args = append(args, s.DatasetID, v, a.Name, nullStr(a.ContentType), a.Bytes, a.SHA256, content, path, at)
		}
	}
	if len(kept) > 0 {
		if _, err := tx.tx.ExecContext(ctx, "DELETE FROM _ploti.attachments WHERE dataset_id IN ("+strings.Join(quoteAll(kept), ", ")+")"); err != nil {
			return fmt.Errorf("put attachments of %d datasets: %w", len(kept), err)
		}
	}
	if len(rows) > 0 {
		if _, err := tx.tx.ExecContext(ctx, `INSERT INTO _ploti.attachments (dataset_id, version, name, content_type, bytes, sha256, content, path, fetched_at)
			VALUES `+strings.Join(rows, ", "), args...); err != nil {
			return fmt.Errorf("put attachments of %d datasets: %w", len(kept), err)
		}
	}
	if _, err := tx.tx.ExecContext(ctx, "DELETE FROM _ploti.attachment_syncs WHERE dataset_id IN ("+strings.Join(quoteAll(all), ", ")+")"); err != nil {
		return fmt.Errorf("record attachments of %d datasets: %w", len(all), err)
	}
	syncs, syncArgs, err := tx.syncRows(sets)
	if err != nil {
		return err
	}
	if _, err := tx.tx.ExecContext(ctx, "INSERT INTO _ploti.attachment_syncs (dataset_id, version, synced_at, error) "+syncs, syncArgs...); err != nil {
		return fmt.Errorf("record attachments of %d datasets: %w", len(all), err)
	}
	return nil
}

// putAttachmentParts is PutAttachmentSets of each part.
func (tx *Tx) putAttachmentParts(ctx context.Context, parts [][]AttachmentSet) error {
	for _, part := range parts {
		if err := tx.PutAttachmentSets(ctx, part); err != nil {
			return err
		}
	}
	return nil
}

// backendAttachments is the most attachments (and sets) an engine's
// statement takes as parameters: PostgreSQL takes at most 65,535 a
// statement, and an attachment is nine.
const backendAttachments = 5000

// attachmentParts is sets in parts an engine's statements take (one part
// in the DuckDB file): each of at most backendAttachments attachments and
// sets, but for a set that has more on its own.
func (tx *Tx) attachmentParts(sets []AttachmentSet) [][]AttachmentSet {
	if !tx.db.rowsInParts() {
		return [][]AttachmentSet{sets}
	}
	var parts [][]AttachmentSet
	start, n := 0, 0
	for i, s := range sets {
		if i > start && (n+len(s.List) > backendAttachments || i-start == backendAttachments) {
			parts = append(parts, sets[start:i])
			start, n = i, 0
		}
		n += len(s.List)
	}
	return append(parts, sets[start:])
}

// syncRows is the sets' attachment_syncs rows as a query, and its
// arguments. A Engine's database takes a VALUES list of parameters; the
// DuckDB file one JSON text (jsonRows): DuckDB's binding grows with the
// square of the parameters, and a VALUES list of four a row, for a
// bootstrap page's 500 datasets, cost 0.5–0.9 s in a traced run at load
// 10–12; BenchmarkTx_PutAttachmentSets_500, at load 3: 65 ms a
// call that way, 17 ms this way.
func (tx *Tx) syncRows(sets []AttachmentSet) (string, []any, error) {
	if tx.db.rowsInParts() {
		rows := make([]string, len(sets))
		var args []any
		for i, s := range sets {
			rows[i] = "(?::VARCHAR, ?::INTEGER, ?::TIMESTAMPTZ, ?::VARCHAR)"
			args = append(args, s.DatasetID, s.Version, tx.Now, nullStr(s.Err))
		}
		return "VALUES " + strings.Join(rows, ", "), args, nil
	}
	type row struct {
		ID      string `json:"dataset_id"`
		Version int    `json:"version"`
		At      any    `json:"synced_at"`
		Err     any    `json:"error"`
	}
	rows := make([]row, len(sets))
	for i, s := range sets {
		rows[i] = row{ID: s.DatasetID, Version: s.Version, At: jsonTime(&tx.Now), Err: nullStr(s.Err)}
	}
	rel, args, err := tx.db.jsonRows(rows, `[{"dataset_id": "VARCHAR", "version": "INTEGER", "synced_at": "TIMESTAMPTZ", "error": "VARCHAR"}]`)
	if err != nil {
		return "", nil, err
	}
	return "SELECT r.dataset_id, r.version, r.synced_at, r.error FROM " + rel, args, nil
}

// PutAttachments replaces a dataset's attachments with those of version
// (list may be empty: the version has none) and records it as kept. Each
// row keeps its own Version (the version whose links brought the file),
// version when zero.
func (tx *Tx) PutAttachments(ctx context.Context, datasetID string, version int, list []Attachment) error {
	return tx.PutAttachmentSets(ctx, []AttachmentSet{{DatasetID: datasetID, Version: version, List: list}})
}

// PutAttachmentError records that keeping version's attachments failed;
// the rows kept stay.
func (tx *Tx) PutAttachmentError(ctx context.Context, datasetID string, version int, msg string) error {
	return tx.PutAttachmentSets(ctx, []AttachmentSet{{DatasetID: datasetID, Version: version, Err: msg}})
}

// nonNilBytes keeps an empty file's content a zero-length BLOB, not NULL.
func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
