package postgres

import (
	"bufio"
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// The binary COPY format (PostgreSQL's "COPY", "Binary Format"): a
// signature, flags and header extension; each row its field count and,
// for each field, its length (-1 for NULL) and its bytes in the type's
// binary send format; a trailer of -1.

var copySignature = []byte("PGCOPY\n\xff\r\n\x00")

// copyWriter writes rows of driver values in the binary COPY format.
type copyWriter struct {
	w    *bufio.Writer
	encs []encoding
	buf  []byte // scratch for one field
}

func newCopyWriter(w *bufio.Writer, encs []encoding) *copyWriter {
	return &copyWriter{w: w, encs: encs}
}

// header writes the signature, the flags and an empty extension.
func (c *copyWriter) header() error {
	c.w.Write(copySignature)
	var b [8]byte
	_, err := c.w.Write(b[:])
	return err
}

// trailer ends the data.
func (c *copyWriter) trailer() error {
	_, err := c.w.Write([]byte{0xff, 0xff})
	if err != nil {
		return err
	}
	return c.w.Flush()
}

// row writes one row; vals are as DuckDB's driver gives exportSelect's
// columns.
func (c *copyWriter) row(vals []driver.Value) error {
	var n [2]byte
	binary.BigEndian.PutUint16(n[:], uint16(len(vals)))
	c.w.Write(n[:])
	for i, v := range vals {
		if v == nil {
			c.w.Write([]byte{0xff, 0xff, 0xff, 0xff})
			continue
		}
		var err error
		c.buf, err = appendValue(c.buf[:0], c.encs[i], v)
		if err != nil {
			return fmt.Errorf("column %d: %w", i+1, err)
		}
		var l [4]byte
		binary.BigEndian.PutUint32(l[:], uint32(len(c.buf)))
		c.w.Write(l[:])
		if _, err := c.w.Write(c.buf); err != nil {
			return err
		}
	}
	return nil
}

// appendValue appends v's binary send format for e to b.
func appendValue(b []byte, e encoding, v driver.Value) ([]byte, error) {
	switch e.kind {
	case kindText:
		switch s := v.(type) {
		case string:
			return appendText(b, s), nil
		case []byte:
			return appendText(b, string(s)), nil
		}
	case kindInt8:
		if x, ok := v.(int64); ok {
			return binary.BigEndian.AppendUint64(b, uint64(x)), nil
		}
	case kindFloat8:
		if x, ok := v.(float64); ok {
			return binary.BigEndian.AppendUint64(b, math.Float64bits(x)), nil
		}
	case kindNumeric:
		if s, ok := v.(string); ok {
			return appendNumeric(b, s)
		}
	case kindBool:
		if x, ok := v.(bool); ok {
			if x {
				return append(b, 1), nil
			}
			return append(b, 0), nil
		}
	case kindDate, kindInt4:
		if x, ok := v.(int32); ok {
			return binary.BigEndian.AppendUint32(b, uint32(x)), nil
		}
	case kindTimestamp:
		if x, ok := v.(int64); ok {
			return binary.BigEndian.AppendUint64(b, uint64(x)), nil
		}
	case kindGeometry:
		if x, ok := v.([]byte); ok {
			return appendEWKB(b, x, SRID)
		}
	case kindJSONB:
		if s, ok := v.(string); ok {
			return appendJSONText(append(b, 1), s), nil // jsonb's version 1: the text
		}
	case kindArray:
		if xs, ok := v.([]any); ok {
			return appendArray(b, *e.elem, xs)
		}
	}
	return b, fmt.Errorf("value of Go type %T for a column of kind %d", v, e.kind)
}

// appendArray appends a one-dimensional array of elem: dimensions, a
// null flag, the element type, the length and lower bound 1, then each
// element as a field. An empty list is an array of no dimensions.
func appendArray(b []byte, elem encoding, xs []any) ([]byte, error) {
	hasNull := uint32(0)
	for _, x := range xs {
		if x == nil {
			hasNull = 1
		}
	}
	dims := uint32(1)
	if len(xs) == 0 {
		dims = 0
	}
	b = binary.BigEndian.AppendUint32(b, dims)
	b = binary.BigEndian.AppendUint32(b, hasNull)
	b = binary.BigEndian.AppendUint32(b, elem.oid)
	if dims == 0 {
		return b, nil
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(xs)))
	b = binary.BigEndian.AppendUint32(b, 1)
	for _, x := range xs {
		if x == nil {
			b = binary.BigEndian.AppendUint32(b, math.MaxUint32)
			continue
		}
		at := len(b)
		b = append(b, 0, 0, 0, 0)
		var err error
		if b, err = appendValue(b, elem, x); err != nil {
			return b, err
		}
		binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	}
	return b, nil
}

// EWKB flag for an SRID after the type (PostGIS's extended WKB).
const ewkbSRID = 0x20000000

// appendEWKB appends wkb (ISO WKB, as DuckDB's ST_AsWKB writes it) as
// PostGIS's extended WKB with srid: the type gets the SRID flag and the
// SRID follows it. PostGIS reads ISO type codes (1001, 2003 …) with the
// flag, so Z and M geometries pass as they are.
func appendEWKB(b []byte, wkb []byte, srid uint32) ([]byte, error) {
	if len(wkb) < 5 {
		return b, fmt.Errorf("geometry of %d bytes is not WKB", len(wkb))
	}
	type byteOrder interface {
		binary.ByteOrder
		binary.AppendByteOrder
	}
	var order byteOrder = binary.LittleEndian
	switch wkb[0] {
	case 1:
	case 0:
		order = binary.BigEndian
	default:
		return b, fmt.Errorf("geometry is not WKB: byte order %d", wkb[0])
	}
	typ := order.Uint32(wkb[1:5])
	if typ&ewkbSRID != 0 {
		return append(b, wkb...), nil // it says its SRID already
	}
	b = append(b, wkb[0])
	b = order.AppendUint32(b, typ|ewkbSRID)
	b = order.AppendUint32(b, srid)
	return append(b, wkb[5:]...), nil
}

// appendNumeric appends a decimal's text ("-1234.50") in numeric's binary
// format: the number of base-10000 digits, the weight of the first, the
// sign, the display scale, then the digits. PostgreSQL rounds it to the
// column's numeric(p,s) as it reads it.
func appendNumeric(b []byte, s string) ([]byte, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	intPart, frac, _ := strings.Cut(s, ".")
	for _, r := range intPart + frac {
		if r < '0' || r > '9' {
			return b, fmt.Errorf("decimal %q is not a number", s)
		}
	}
	dscale := len(frac)
	intPart = strings.TrimLeft(intPart, "0")
	// Pad to whole groups of four digits: the integer part on the left,
	// the fraction on the right.
	if r := len(intPart) % 4; r != 0 {
		intPart = strings.Repeat("0", 4-r) + intPart
	}
	if r := len(frac) % 4; r != 0 {
		frac += strings.Repeat("0", 4-r)
	}
	all := intPart + frac
	weight := len(intPart)/4 - 1
	digits := make([]uint16, 0, len(all)/4)
	for i := 0; i < len(all); i += 4 {
		d := uint16(all[i]-'0')*1000 + uint16(all[i+1]-'0')*100 + uint16(all[i+2]-'0')*10 + uint16(all[i+3]-'0')
		digits = append(digits, d)
	}
	// Leading zero groups lower the weight; trailing ones go.
	for len(digits) > 0 && digits[0] == 0 {
		digits = digits[1:]
		weight--
	}
	for len(digits) > 0 && digits[len(digits)-1] == 0 {
		digits = digits[:len(digits)-1]
	}
	sign := uint16(0)
	if neg && len(digits) > 0 {
		sign = 0x4000
	}
	if len(digits) == 0 {
		weight = 0
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(digits)))
	b = binary.BigEndian.AppendUint16(b, uint16(int16(weight)))
	b = binary.BigEndian.AppendUint16(b, sign)
	b = binary.BigEndian.AppendUint16(b, uint16(dscale))
	for _, d := range digits {
		b = binary.BigEndian.AppendUint16(b, d)
	}
	return b, nil
}
