package postgres

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	bindings "github.com/duckdb/duckdb-go-bindings"
)

// column reads one column of a data chunk from its vector's memory, as
// DuckDB lays it out (fetched chunks are flat: a value a row): a fixed
// width value a row (BOOLEAN a byte, INTEGER 4 bytes, BIGINT and DOUBLE
// 8, a DECIMAL its integer's), a 16-byte string_t a row for VARCHAR and
// BLOB (its length, then the bytes inline up to 12, else a prefix and a
// pointer), a list_entry (offset, length) a row for a LIST, whose items
// are its child vector's; and a validity mask, a bit a row, none when
// every row is valid.
type column struct {
	enc   *encoding
	typ   duckType
	data  unsafe.Pointer
	mask  unsafe.Pointer // nil: no NULL
	null  bool           // a column of SQL NULL: every row NULL
	items *column        // a list's items
}

// init checks that a column of DuckDB's type t is what e takes (what
// exportSelect makes of the schema's type), and readies the column.
func (c *column) init(e *encoding, t duckType) error {
	c.enc, c.typ = e, t
	if t.id == bindings.TypeSQLNull {
		c.null = true
		return nil
	}
	if !takes(e.kind, t) {
		return fmt.Errorf("DuckDB type %d for a column of kind %d", t.id, e.kind)
	}
	if e.kind == kindArray {
		c.items = &column{}
		return c.items.init(e.elem, *t.items)
	}
	return nil
}

// takes tells whether kind k is encoded from DuckDB's type t.
func takes(k kind, t duckType) bool {
	switch k {
	case kindText:
		return t.id == bindings.TypeVarchar || t.id == bindings.TypeBlob
	case kindJSONB:
		return t.id == bindings.TypeVarchar
	case kindGeometry:
		return t.id == bindings.TypeBlob
	case kindInt8, kindTimestamp:
		return t.id == bindings.TypeBigInt
	case kindFloat8:
		return t.id == bindings.TypeDouble
	case kindNumeric:
		if t.id != bindings.TypeDecimal {
			return false
		}
		switch t.internal {
		case bindings.TypeSmallInt, bindings.TypeInteger, bindings.TypeBigInt, bindings.TypeHugeInt:
			return true
		}
	case kindBool:
		return t.id == bindings.TypeBoolean
	case kindDate, kindInt4:
		return t.id == bindings.TypeInteger
	case kindArray:
		return t.id == bindings.TypeList
	}
	return false
}

// load points the column at vec, a vector of the chunk at hand.
func (c *column) load(vec bindings.Vector) {
	if c.null {
		return
	}
	c.data = bindings.VectorGetData(vec)
	c.mask = bindings.VectorGetValidity(vec)
	if c.items != nil {
		c.items.load(bindings.ListVectorGetChild(vec))
	}
}

// valid tells whether row r holds a value.
func (c *column) valid(r int) bool {
	if c.null {
		return false
	}
	if c.mask == nil {
		return true
	}
	w := *(*uint64)(unsafe.Add(c.mask, r/64*8))
	return w&(1<<(r%64)) != 0
}

// fixed is the address of row r's value, of width bytes.
func (c *column) fixed(r, width int) unsafe.Pointer {
	return unsafe.Add(c.data, r*width)
}

// str is row r's VARCHAR or BLOB, in DuckDB's memory: valid while the
// chunk is.
func (c *column) str(r int) string {
	p := c.fixed(r, 16)
	n := *(*uint32)(p)
	if n <= 12 {
		return unsafe.String((*byte)(unsafe.Add(p, 4)), n)
	}
	return unsafe.String(*(**byte)(unsafe.Add(p, 8)), n)
}

// appendField appends row r's value (valid) in its binary send format.
func (c *column) appendField(b []byte, r int) ([]byte, error) {
	switch c.enc.kind {
	case kindText:
		return appendText(b, c.str(r)), nil
	case kindJSONB:
		return appendJSONText(append(b, 1), c.str(r)), nil // jsonb's version 1: the text
	case kindGeometry:
		s := c.str(r)
		return appendEWKB(b, unsafe.Slice(unsafe.StringData(s), len(s)), SRID)
	case kindInt8, kindTimestamp, kindFloat8:
		return binary.BigEndian.AppendUint64(b, *(*uint64)(c.fixed(r, 8))), nil
	case kindDate, kindInt4:
		return binary.BigEndian.AppendUint32(b, *(*uint32)(c.fixed(r, 4))), nil
	case kindBool:
		if *(*byte)(c.fixed(r, 1)) != 0 {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case kindNumeric:
		hi, lo := c.decimal(r)
		return appendDecimal(b, hi, lo, c.typ.scale), nil
	case kindArray:
		e := (*[2]uint64)(c.fixed(r, 16))
		return c.items.appendArray(b, int(e[0]), int(e[1]))
	}
	return b, fmt.Errorf("no encoding of kind %d", c.enc.kind)
}

// decimal is row r's DECIMAL as a 128-bit integer (hi:lo, two's
// complement) of the type's scale.
func (c *column) decimal(r int) (hi, lo uint64) {
	var v int64
	switch c.typ.internal {
	case bindings.TypeSmallInt:
		v = int64(*(*int16)(c.fixed(r, 2)))
	case bindings.TypeInteger:
		v = int64(*(*int32)(c.fixed(r, 4)))
	case bindings.TypeBigInt:
		v = *(*int64)(c.fixed(r, 8))
	default: // HUGEINT: the lower 64 bits, then the upper
		h := (*[2]uint64)(c.fixed(r, 16))
		return h[1], h[0]
	}
	return uint64(v >> 63), uint64(v)
}

// appendArray appends the n items from off of this column (a list's
// child) as a one-dimensional array: dimensions, a null flag, the item
// type, the length and lower bound 1, then each item as a field. An
// empty list is an array of no dimensions.
func (c *column) appendArray(b []byte, off, n int) ([]byte, error) {
	hasNull := uint32(0)
	for i := off; i < off+n; i++ {
		if !c.valid(i) {
			hasNull = 1
			break
		}
	}
	dims := uint32(1)
	if n == 0 {
		dims = 0
	}
	b = binary.BigEndian.AppendUint32(b, dims)
	b = binary.BigEndian.AppendUint32(b, hasNull)
	b = binary.BigEndian.AppendUint32(b, c.enc.oid)
	if dims == 0 {
		return b, nil
	}
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = binary.BigEndian.AppendUint32(b, 1)
	for i := off; i < off+n; i++ {
		if !c.valid(i) {
			b = binary.BigEndian.AppendUint32(b, math.MaxUint32)
			continue
		}
		at := len(b)
		b = append(b, 0, 0, 0, 0)
		var err error
		if b, err = c.appendField(b, i); err != nil {
			return b, err
		}
		binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	}
	return b, nil
}
