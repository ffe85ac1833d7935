package main

// What history, diff and changes print, typed by the columns of the
// dataset's table: the library hands values over as text (a story, a
// changed column) or as DuckDB's to_json writes them (rows); the output
// gives each as its column's type says (jsonvalues.go).

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
)

// tableTyping reads the column types of the tables a command prints,
// once; a table whose types cannot be read prints its values untyped.
type tableTyping struct {
	rd     *replica.Reader
	tables map[string]tableColumns
}

func newTableTyping(rd *replica.Reader) *tableTyping { return &tableTyping{rd: rd} }

// rows are the types of a table's rows now (the table's own first);
// history those of its history (the history view's first).
func (t *tableTyping) rows(ctx context.Context, table string) colTypes {
	tc := t.read(ctx, table)
	return tc.hist.over(tc.main)
}

func (t *tableTyping) history(ctx context.Context, table string) colTypes {
	tc := t.read(ctx, table)
	return tc.main.over(tc.hist)
}

func (t *tableTyping) read(ctx context.Context, table string) tableColumns {
	if t.tables == nil {
		all, err := allTableTypes(ctx, t.rd.DB())
		if err != nil {
			all = map[string]tableColumns{}
		}
		t.tables = all
	}
	return t.tables[table]
}

// storyOut is one row of history --json: the row's values as an object of
// column → typed value (a NULL left out).
type storyOut struct {
	RecordID    string     `json:"recordId"`
	ValidFrom   int        `json:"validFrom"`
	ValidTo     *int       `json:"validTo,omitempty"`
	ValidFromAt *time.Time `json:"validFromAt,omitempty"`
	ValidToAt   *time.Time `json:"validToAt,omitempty"`
	Change      string     `json:"change"`
	OriginID    string     `json:"originId,omitempty"`
	Values      object     `json:"values"`
	Ended       bool       `json:"ended,omitempty"`
	// typed are the values by name, for the text.
	typed map[string]any
}

func typedStory(story []replica.StoryRow, types colTypes) []storyOut {
	out := make([]storyOut, 0, len(story))
	for _, s := range story {
		o := storyOut{RecordID: s.RecordID, ValidFrom: s.ValidFrom, ValidTo: s.ValidTo, ValidFromAt: s.ValidFromAt,
			ValidToAt: s.ValidToAt, Change: s.Change, OriginID: s.OriginID, Values: object{}, Ended: s.Ended, typed: map[string]any{}}
		for _, c := range s.Values {
			v := types.typedText(c.Name, c.Value)
			o.typed[c.Name] = v
			if b, err := json.Marshal(v); err == nil {
				o.Values = append(o.Values, member{c.Name, b})
			}
		}
		out = append(out, o)
	}
	return out
}

// columnOut is a changed column, its old and new values typed (a NULL
// left out).
type columnOut struct {
	Name string `json:"name"`
	Old  any    `json:"old,omitempty"`
	New  any    `json:"new,omitempty"`
}

func typedColumns(cols []storage.ColumnChange, types colTypes) []columnOut {
	if cols == nil {
		return nil
	}
	out := make([]columnOut, len(cols))
	for i, c := range cols {
		out[i] = columnOut{Name: c.Name, Old: types.typedText(c.Name, c.Old), New: types.typedText(c.Name, c.New)}
	}
	return out
}

// diffOut is diff --json.
type diffOut struct {
	DatasetID string          `json:"datasetId"`
	Table     string          `json:"table"`
	From      int             `json:"from"`
	To        int             `json:"to"`
	Counts    replica.Counts  `json:"counts"`
	Changes   []diffChangeOut `json:"changes"`
}

type diffChangeOut struct {
	Change           string          `json:"change"`
	RecordID         string          `json:"recordId"`
	PreviousRecordID string          `json:"previousRecordId,omitempty"`
	Columns          []columnOut     `json:"columns,omitempty"`
	Before           json.RawMessage `json:"before,omitempty"`
	After            json.RawMessage `json:"after,omitempty"`
}

func typedDiff(df *replica.Diff, types colTypes) diffOut {
	out := diffOut{DatasetID: df.DatasetID, Table: df.Table, From: df.From, To: df.To, Counts: df.Counts, Changes: []diffChangeOut{}}
	for _, c := range df.Changes {
		o := diffChangeOut{Change: c.Change, RecordID: c.RecordID, PreviousRecordID: c.PreviousRecordID,
			Columns: typedColumns(c.Columns, types)}
		if c.Before != nil {
			o.Before = types.typedRow(c.Before)
		}
		if c.After != nil {
			o.After = types.typedRow(c.After)
		}
		out.Changes = append(out.Changes, o)
	}
	return out
}

// changeSetOut is changes --json.
type changeSetOut struct {
	Mark     string              `json:"mark"`
	Datasets []datasetChangesOut `json:"datasets"`
}

type datasetChangesOut struct {
	DatasetID   string         `json:"datasetId"`
	Table       string         `json:"table"`
	Source      string         `json:"source"`
	FromVersion int            `json:"fromVersion"`
	NewMark     bool           `json:"newMark,omitempty"`
	ToVersion   int            `json:"toVersion"`
	FromHistory bool           `json:"fromHistory"`
	Counts      replica.Counts `json:"counts"`
	Changes     []changeOut    `json:"changes"`
}

type changeOut struct {
	Change           string          `json:"change"`
	RecordID         string          `json:"recordId"`
	PreviousRecordID string          `json:"previousRecordId,omitempty"`
	Row              json.RawMessage `json:"row,omitempty"`
	Before           json.RawMessage `json:"before,omitempty"`
	Columns          []columnOut     `json:"columns,omitempty"`
}

func typedChanges(ctx context.Context, cs *replica.ChangeSet, tt *tableTyping) changeSetOut {
	out := changeSetOut{Mark: cs.Mark, Datasets: []datasetChangesOut{}}
	for _, d := range cs.Datasets {
		rows, hist := tt.rows(ctx, d.Table), tt.history(ctx, d.Table)
		o := datasetChangesOut{DatasetID: d.DatasetID, Table: d.Table, Source: d.Source, FromVersion: d.FromVersion, NewMark: d.NewMark,
			ToVersion: d.ToVersion, FromHistory: d.FromHistory, Counts: d.Counts, Changes: []changeOut{}}
		for _, c := range d.Changes {
			co := changeOut{Change: c.Change, RecordID: c.RecordID, PreviousRecordID: c.PreviousRecordID, Columns: typedColumns(c.Columns, hist)}
			if c.Row != nil {
				co.Row = rows.typedRow(c.Row)
			}
			if c.Before != nil {
				co.Before = hist.typedRow(c.Before)
			}
			o.Changes = append(o.Changes, co)
		}
		out.Datasets = append(out.Datasets, o)
	}
	return out
}
