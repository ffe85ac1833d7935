package postgres

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"

	bindings "github.com/duckdb/duckdb-go-bindings"
)

// The binary COPY format (PostgreSQL's "COPY", "Binary Format"): a
// signature, flags and header extension; each row its field count and,
// for each field, its length (-1 for NULL) and its bytes in the type's
// binary send format; a trailer of -1.

var copySignature = []byte("PGCOPY\n\xff\r\n\x00")

// copyWriter writes an export's rows in the binary COPY format to w, a
// data chunk at a time: each field from its vector's memory (column),
// into one buffer a chunk that w takes in one write.
type copyWriter struct {
	w    io.Writer
	encs []encoding
	cols []column
	buf  []byte
	rows int64
}

func newCopyWriter(w io.Writer, encs []encoding) *copyWriter {
	return &copyWriter{w: w, encs: encs}
}

// columns checks that the export's columns are what encs take, and writes
// the signature, the flags and an empty header extension.
func (c *copyWriter) columns(types []duckType) error {
	if len(types) != len(c.encs) {
		return fmt.Errorf("export has %d columns, COPY %d", len(types), len(c.encs))
	}
	c.cols = make([]column, len(types))
	for i := range types {
		if err := c.cols[i].init(&c.encs[i], types[i]); err != nil {
			return fmt.Errorf("column %d: %w", i+1, err)
		}
	}
	c.buf = append(append(c.buf[:0], copySignature...), 0, 0, 0, 0, 0, 0, 0, 0)
	return nil
}

// chunk writes a data chunk's rows: for each, its field count, then each
// field's length (-1 for NULL) and bytes.
func (c *copyWriter) chunk(ch bindings.DataChunk) error {
	n := int(bindings.DataChunkGetSize(ch))
	for i := range c.cols {
		c.cols[i].load(bindings.DataChunkGetVector(ch, bindings.IdxT(i)))
	}
	b := c.buf
	var err error
	for r := range n {
		b = binary.BigEndian.AppendUint16(b, uint16(len(c.cols)))
		for i := range c.cols {
			col := &c.cols[i]
			if !col.valid(r) {
				b = append(b, 0xff, 0xff, 0xff, 0xff)
				continue
			}
			at := len(b)
			b = append(b, 0, 0, 0, 0)
			if b, err = col.appendField(b, r); err != nil {
				return fmt.Errorf("column %d: %w", i+1, err)
			}
			binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
		}
	}
	c.rows += int64(n)
	c.buf = b[:0]
	_, err = c.w.Write(b)
	return err
}

// trailer ends the data (after what is left of the header, when the
// export had no rows).
func (c *copyWriter) trailer() error {
	_, err := c.w.Write(append(c.buf, 0xff, 0xff))
	return err
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

// appendDecimal appends a DuckDB decimal, the integer hi:lo (128 bits,
// two's complement) of scale digits after the point, in numeric's binary
// format: the number of base-10000 digits, the weight of the first, the
// sign, the display scale (the decimal's scale, as its text has it), then
// the digits. PostgreSQL rounds it to the column's numeric(p,s) as it
// reads it.
func appendDecimal(b []byte, hi, lo uint64, scale uint8) []byte {
	neg := int64(hi) < 0
	if neg {
		hi, lo = ^hi, ^lo
		var c uint64
		lo, c = bits.Add64(lo, 1, 0)
		hi += c
	}
	// Base-10000 digits from the last: the fraction's last group holds
	// scale%4 digits, padded on the right; the point falls between groups.
	var groups [16]uint16
	n, frac := 0, int(scale)/4
	if k := scale % 4; k != 0 {
		var r uint64
		hi, lo, r = divmod128(hi, lo, pow10[k])
		groups[n] = uint16(r * pow10[4-k])
		n, frac = n+1, frac+1
	}
	for hi != 0 || lo != 0 || n < frac {
		var r uint64
		hi, lo, r = divmod128(hi, lo, 10000)
		groups[n] = uint16(r)
		n++
	}
	digits := groups[:n]
	// The digits of value first; leading zero groups lower the weight,
	// trailing ones go.
	for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
		digits[i], digits[j] = digits[j], digits[i]
	}
	weight := n - frac - 1
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
	b = binary.BigEndian.AppendUint16(b, uint16(scale))
	for _, d := range digits {
		b = binary.BigEndian.AppendUint16(b, d)
	}
	return b
}

var pow10 = [5]uint64{1, 10, 100, 1000, 10000}

// divmod128 divides hi:lo by d.
func divmod128(hi, lo, d uint64) (qhi, qlo, r uint64) {
	qhi, r = hi/d, hi%d
	qlo, r = bits.Div64(r, lo, d)
	return qhi, qlo, r
}
