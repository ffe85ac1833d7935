package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"

	bindings "github.com/duckdb/duckdb-go-bindings"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// chunkDuck is the in-memory DuckDB that runs the COPYs' exports, opened
// through DuckDB's C API rather than database/sql: its results are read
// as DuckDB's data chunks, a vector of each column's values in DuckDB's
// own memory, and encoded from there into the binary COPY format, with
// no Go value made of a cell (database/sql's driver makes one of each).
// It has the settings of the DuckDB that checks the files (db.duck):
// duckread.Settings, the session in UTC. The export only reads files,
// so it needs nothing of that one's.
type chunkDuck struct {
	mu   sync.Mutex // one export at a time on conn
	db   bindings.Database
	conn bindings.Connection
}

// openChunkDuck opens an in-memory DuckDB with the engine's settings.
func openChunkDuck(opts storage.Options) (*chunkDuck, error) {
	var cfg bindings.Config
	if bindings.CreateConfig(&cfg) == bindings.StateError {
		bindings.DestroyConfig(&cfg)
		return nil, errors.New("create a DuckDB configuration")
	}
	defer bindings.DestroyConfig(&cfg)
	for name, v := range duckread.Settings(opts) {
		if bindings.SetConfig(cfg, name, v[0]) == bindings.StateError {
			return nil, fmt.Errorf("DuckDB setting %s=%s refused", name, v[0])
		}
	}
	d := &chunkDuck{}
	var msg string
	if bindings.OpenExt("", &d.db, cfg, &msg) == bindings.StateError {
		bindings.Close(&d.db)
		return nil, errors.New(msg)
	}
	if bindings.Connect(d.db, &d.conn) == bindings.StateError {
		d.close()
		return nil, errors.New("connect to the in-memory DuckDB")
	}
	var res bindings.Result
	state := bindings.Query(d.conn, duckread.SessionSetup, &res)
	msg = bindings.ResultError(&res)
	bindings.DestroyResult(&res)
	if state == bindings.StateError {
		d.close()
		return nil, errors.New(msg)
	}
	return d, nil
}

// close disconnects and closes the DuckDB, after the export under way.
func (d *chunkDuck) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	bindings.Disconnect(&d.conn)
	bindings.Close(&d.db)
}

// chunkReader takes an export's result: its columns' types first, then
// each data chunk, borrowed for the call.
type chunkReader interface {
	columns(types []duckType) error
	chunk(ch bindings.DataChunk) error
}

// stream runs query with args (? placeholders) and gives r its result
// chunk by chunk as DuckDB makes them: a streaming result, so a table of
// any size passes in bounded memory. ctx's end interrupts the query. An
// error of DuckDB's is returned in DuckDB's words; r's as it is.
func (d *chunkDuck) stream(ctx context.Context, query string, args []any, r chunkReader) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	stmt, err := d.prepare(query, args)
	if err != nil {
		return err
	}
	defer bindings.DestroyPrepare(&stmt)
	// The interrupt must land before stream returns: one delivered late
	// (its goroutine scheduled after the query ended) interrupts the next
	// export on the connection instead, or races close's Disconnect. The
	// query's start clears an interrupt that came before it, so ctx is
	// also asked after the start and between chunks.
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(interrupted)
		bindings.Interrupt(d.conn)
	})
	defer func() {
		if !stop() {
			<-interrupted
		}
	}()
	var pending bindings.PendingResult
	if bindings.PendingPreparedStreaming(stmt, &pending) == bindings.StateError {
		err := errors.New(bindings.PendingError(pending))
		bindings.DestroyPending(&pending)
		return err
	}
	defer bindings.DestroyPending(&pending)
	if err := ctx.Err(); err != nil {
		return err
	}
	var res bindings.Result
	defer bindings.DestroyResult(&res)
	if bindings.ExecutePending(pending, &res) == bindings.StateError {
		return stopped(ctx, errors.New(bindings.ResultError(&res)))
	}
	if err := r.columns(resultTypes(&res)); err != nil {
		return err
	}
	for ctx.Err() == nil {
		ch := bindings.FetchChunk(res)
		if ch.Ptr == nil {
			if msg := bindings.ResultError(&res); msg != "" {
				return stopped(ctx, errors.New(msg))
			}
			return ctx.Err()
		}
		err := r.chunk(ch)
		bindings.DestroyDataChunk(&ch)
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// prepare prepares query on the connection and binds args.
func (d *chunkDuck) prepare(query string, args []any) (bindings.PreparedStatement, error) {
	var stmt bindings.PreparedStatement
	if bindings.Prepare(d.conn, query, &stmt) == bindings.StateError {
		err := errors.New(bindings.PrepareError(stmt))
		bindings.DestroyPrepare(&stmt)
		return stmt, err
	}
	if err := bindArgs(stmt, args); err != nil {
		bindings.DestroyPrepare(&stmt)
		return stmt, err
	}
	return stmt, nil
}

// stopped is err, with ctx's error first when ctx ended (DuckDB's
// "Interrupted!" is then ours).
func stopped(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return errors.Join(cerr, err)
	}
	return err
}

// bindArgs binds the export's arguments: strings, int32s and lists of
// strings, the only kinds the exports pass.
func bindArgs(stmt bindings.PreparedStatement, args []any) error {
	for i, a := range args {
		at := bindings.IdxT(i + 1)
		var state bindings.State
		switch v := a.(type) {
		case string:
			state = bindings.BindVarchar(stmt, at, v)
		case int32:
			state = bindings.BindInt32(stmt, at, v)
		case []string:
			state = bindStrings(stmt, at, v)
		default:
			return fmt.Errorf("export argument %d of Go type %T", i+1, a)
		}
		if state == bindings.StateError {
			return fmt.Errorf("bind export argument %d: %s", i+1, bindings.PrepareError(stmt))
		}
	}
	return nil
}

// bindStrings binds a VARCHAR[] of ss.
func bindStrings(stmt bindings.PreparedStatement, at bindings.IdxT, ss []string) bindings.State {
	vals := make([]bindings.Value, len(ss))
	for i, s := range ss {
		vals[i] = bindings.CreateVarchar(s)
	}
	typ := bindings.CreateLogicalType(bindings.TypeVarchar)
	list := bindings.CreateListValue(typ, vals)
	state := bindings.BindValue(stmt, at, list)
	bindings.DestroyValue(&list)
	bindings.DestroyLogicalType(&typ)
	for i := range vals {
		bindings.DestroyValue(&vals[i])
	}
	return state
}

// duckType is a result column's DuckDB type, as far as the encoder needs
// it: the type's id, a list's items, a decimal's scale and the integer
// that holds it.
type duckType struct {
	id       bindings.Type
	items    *duckType
	scale    uint8
	internal bindings.Type
}

// resultTypes are the types of res's columns.
func resultTypes(res *bindings.Result) []duckType {
	n := int(bindings.ColumnCount(res))
	types := make([]duckType, n)
	for i := range types {
		lt := bindings.ColumnLogicalType(res, bindings.IdxT(i))
		types[i] = typeOf(lt)
		bindings.DestroyLogicalType(&lt)
	}
	return types
}

// typeOf describes lt.
func typeOf(lt bindings.LogicalType) duckType {
	t := duckType{id: bindings.GetTypeId(lt)}
	switch t.id {
	case bindings.TypeList:
		child := bindings.ListTypeChildType(lt)
		items := typeOf(child)
		bindings.DestroyLogicalType(&child)
		t.items = &items
	case bindings.TypeDecimal:
		t.scale = bindings.DecimalScale(lt)
		t.internal = bindings.DecimalInternalType(lt)
	}
	return t
}
